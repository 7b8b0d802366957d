/**
 * Seed 003 Loader Steps 5 "Tool Validation (Optional)": the host's tool
 * validator (the ToolValidationManager's counterpart) sees each tool a
 * plugin registers, before registration, and can refuse it. Real plugin
 * module loaded in process through loadPlugins.
 */
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { loadPlugins } from '../../src/shapes/esm/loadPlugins.js';
import type { EsmToolUnderValidation, EsmToolValidator } from '../../src/shapes/esm/validateTools.js';

const root = join(import.meta.dirname, '../../fixtures/plugins/esm-od-strict');

async function load(validateTool: EsmToolValidator, strictTools = false) {
  const server = new McpServer({ name: 'od-host', version: '1.0.0' });
  return (await loadPlugins(server, [root], { trust: 'in-process', validateTool, strictTools }))._unsafeUnwrap().summary;
}

describe('seed 003 Loader Steps 5: a host tool validator run on captured tools before registration', () => {
  it('Loader Steps 5: the validator sees each registered tool with its plugin and config; a tool it refuses is skipped and counted', async () => {
    const seen: EsmToolUnderValidation[] = [];
    const summary = await load((tool) => {
      seen.push(tool);
      return tool.name === 'ping' ? ['ping is not allowed on this host'] : [];
    });
    expect(seen.map((t) => [t.plugin, t.name, t.config.description])).toEqual([['od-strict', 'ping', 'Answers pong']]);
    expect(summary.loaded.map((p) => [p.name, p.tools])).toEqual([['od-strict', 0]]);
    expect(summary.stats.invalidTools).toBe(1);
    expect(summary.loaded[0]!.warnings.some((w) => w.includes('ping is not allowed on this host'))).toBe(true);
  });

  it('Loader Steps 5: "With STRICT_TOOLS=true, invalid tools abort the plugin load": a refused tool fails the load with PLUGIN_TOOL_INVALID', async () => {
    const summary = await load(() => ['no tools today'], true);
    expect(summary.loaded).toEqual([]);
    expect(summary.failed.map((f) => f.error.code)).toEqual(['PLUGIN_TOOL_INVALID']);
    expect(summary.failed[0]!.error.details).toMatchObject({ invalidTools: [{ name: 'ping', problems: ['no tools today'] }] });
  });

  it('Loader Steps 6 "Error Handling": a validator that throws refuses the tool with its message instead of breaking the load', async () => {
    const summary = await load(() => {
      throw new Error('policy service down');
    });
    expect(summary.loaded.map((p) => p.tools)).toEqual([0]);
    expect(summary.loaded[0]!.warnings.some((w) => w.includes('policy service down'))).toBe(true);
  });
});
