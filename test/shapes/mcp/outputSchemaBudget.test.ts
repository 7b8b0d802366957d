/**
 * The output schemas a running MCP plugin lists are compiled on the host's
 * own thread (Ajv), which every plugin and the gateway share, and a plugin
 * may list new ones at every `tools/list_changed`. Real plugin processes
 * (mcp-raw --schema-bytes=N: `shaped`'s output schema about N bytes, new at
 * every list) through McpSession.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { HostError } from '../../../src/errors/HostError.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import type { McpPluginNotice } from '../../../src/shapes/mcp/McpSurface.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const RAW = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'plugins', 'mcp-raw', 'bin', 'mcp-raw.mjs');

const sessions: McpSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function rawPlugin(schemaBytes: number, onMismatch?: (mismatch: HostError | undefined) => void, onNotice?: (notice: McpPluginNotice) => void): McpSession {
  const session = McpSession.create({
    launch: launchCommand([process.execPath, RAW, `--schema-bytes=${schemaBytes}`]),
    expectedTools: ['shaped', 'raw'],
    ...(onMismatch === undefined ? {} : { onToolsChanged: (change) => onMismatch(change.mismatch) }),
    ...(onNotice === undefined ? {} : { onNotice }),
  })._unsafeUnwrap();
  sessions.push(session);
  return session;
}

describe('output schemas of a running plugin', () => {
  it('a schema larger than maxSchemaBytes (the manifest schemas\' bound too) is not compiled: its tool is listed and answers unchecked', async () => {
    // 1,000 bytes over 32 KiB: R8's first bound (64 KiB) compiled it on the host's thread; B2's failed the start.
    const notices: McpPluginNotice[] = [];
    const session = rawPlugin(pluginAnswerLimits.maxSchemaBytes + 1_000, undefined, (notice) => notices.push(notice));
    expect((await session.listTools())._unsafeUnwrap().map((tool) => tool.name)).toEqual(['shaped', 'raw']);
    expect(notices).toMatchObject([{ kind: 'output_schema_unchecked', tool: 'shaped', bound: 'bytes' }]);
    // `n` is a required number in the schema: unchecked, the plugin's own answer is passed on as it is.
    const answered = (await session.callTool('shaped', { answer: { content: [], structuredContent: { n: 'x' } } }))._unsafeUnwrap();
    expect(answered.value.structuredContent).toEqual({ n: 'x' });
  }, 60_000);

  it('new schemas at every list_changed stop being compiled once the process compiled maxCompiledSchemaBytes: the tool is then unchecked', async () => {
    const schemaBytes = 30_000;
    const mismatches: (HostError | undefined)[] = [];
    const notices: McpPluginNotice[] = [];
    let changed: () => void = () => undefined;
    const session = rawPlugin(
      schemaBytes,
      (mismatch) => {
        mismatches.push(mismatch);
        changed();
      },
      (notice) => notices.push(notice),
    );
    expect((await session.listTools()).isOk()).toBe(true);
    const wrongType = { answer: { content: [], structuredContent: { n: 'x' } } };
    // Within the budget the schema is compiled and checked.
    expect((await session.callTool('shaped', wrongType))._unsafeUnwrapErr().code).toBe('PLUGIN_MALFORMED_RESPONSE');
    // The start compiled one schema; each relist lists a new one (each a little over schemaBytes), the last past the budget.
    const relists = Math.floor(pluginAnswerLimits.maxCompiledSchemaBytes / schemaBytes);
    for (let i = 0; i < relists; i++) {
      const next = new Promise<void>((resolve) => (changed = resolve));
      expect((await session.callTool('raw', { relist: true }))._unsafeUnwrap().isError).toBe(false);
      await next;
    }
    // Before the budget every list compiled its new schema, however many came; past it the list still passes.
    expect(mismatches).toEqual(Array.from({ length: relists }, () => undefined));
    expect(notices).toEqual([{ kind: 'output_schema_unchecked', tool: 'shaped', bound: 'process_budget', schemaBytes: expect.any(Number) }]);
    expect((await session.callTool('shaped', wrongType))._unsafeUnwrap().value.structuredContent).toEqual({ n: 'x' });
    // Another new schema past the budget: still unchecked, not said again.
    const next = new Promise<void>((resolve) => (changed = resolve));
    expect((await session.callTool('raw', { relist: true }))._unsafeUnwrap().isError).toBe(false);
    await next;
    expect(mismatches.at(-1)).toBeUndefined();
    expect(notices).toHaveLength(1);
  }, 120_000);
});
