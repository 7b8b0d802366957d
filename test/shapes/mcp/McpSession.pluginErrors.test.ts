/**
 * A plugin's JSON-RPC error answer to tools/call (attack review): what the
 * host makes of the code and the data is the plugin's error, never a
 * condition of the host's own (a closed connection, a timeout). A plugin picks any code, -32000 and -32001
 * included (which the SDK also uses for a closed connection and a timeout
 * of its own), and any data, nested as deep as its frame allows.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import pluginAnswerLimits from '../../../etc/plugin-answers.json' with { type: 'json' };
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { McpSession } from '../../../src/shapes/mcp/McpSession.js';
import { launchCommand, stopAllTestProcesses } from '../../support/mcpLaunch.js';

const RAW = fileURLToPath(new URL('../../../fixtures/plugins/mcp-raw/bin/mcp-raw.mjs', import.meta.url));
const DEEP = fileURLToPath(new URL('../../../fixtures/plugins/host-deep/bin/deep.mjs', import.meta.url));
const sessions: McpSession[] = [];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  await stopAllTestProcesses();
});

function session(script: string, tools: string[]): { session: McpSession; processes: PluginProcess[] } {
  const processes: PluginProcess[] = [];
  const created = McpSession.create({ launch: launchCommand([process.execPath, script], { onSpawn: (p) => processes.push(p) }), expectedTools: tools })._unsafeUnwrap();
  sessions.push(created);
  return { session: created, processes };
}

describe("a plugin's JSON-RPC error answer", () => {
  it.each([
    [-32000, 'Connection closed'],
    [-32001, 'Request timed out'],
  ])("with code %i is the plugin's error, not a crash or a timeout of the host's: the same process serves the next call", async (code, message) => {
    const { session: raw, processes } = session(RAW, ['shaped', 'raw']);
    const failed = await raw.callTool('raw', { error: { code, message } });
    expect(failed.isErr() ? failed.error.code : 'ok').toBe('PLUGIN_INTERNAL_ERROR');
    expect(failed.isErr() && failed.error.details.jsonrpc_code).toBe(code);
    expect((await raw.callTool('raw', {})).isOk()).toBe(true);
    expect(processes).toHaveLength(1);
    expect(processes[0]?.exitInfo).toBeUndefined();
  });

  it('with data nested deeper than the answer bound is refused as a malformed answer whose details any logger can print', async () => {
    const { session: deep } = session(DEEP, ['deep']);
    const within = await deep.callTool('deep', { depth: pluginAnswerLimits.maxNestingDepth - 2, as: 'error' });
    expect(within.isErr() && within.error.code).toBe('PLUGIN_INTERNAL_ERROR');
    const failed = await deep.callTool('deep', { depth: 100_000, as: 'error' });
    expect(failed.isErr() ? failed.error.code : 'ok').toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(failed.isErr() && failed.error.details.max_nesting_depth).toBe(pluginAnswerLimits.maxNestingDepth);
    expect(() => JSON.stringify(failed)).not.toThrow();
  });
});

describe('a call whose arguments cannot be written to the plugin', () => {
  it('ends as a failed Result, not a rejection, and the session serves the next call', async () => {
    const { session: raw } = session(RAW, ['shaped', 'raw']);
    const outcome = await raw.callTool('raw', { n: 1n }).then(
      (result) => (result.isErr() ? 'failed' : 'ok'),
      (error: unknown) => `rejected: ${String(error)}`,
    );
    expect(outcome).toBe('failed');
    expect((await raw.callTool('raw', {})).isOk()).toBe(true);
  });
});

describe('stray lines nested too deep to print', () => {
  it('an answer to no request and progress on no token are reported, not thrown out of the pipe reader, and the call goes on', async () => {
    const { session: deep, processes } = session(DEEP, ['deep']);
    const answered = await deep.callTool('deep', { depth: 100_000, as: 'stray' });
    expect(answered.isOk() ? answered.value.value.content : answered.error.code).toEqual([{ type: 'text', text: 'after stray lines' }]);
    expect(processes[0]?.exitInfo).toBeUndefined();
  });
});
