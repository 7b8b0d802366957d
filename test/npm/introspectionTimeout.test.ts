/**
 * The one start of an npm server at install, to list its tools, gets the host's `startupTimeoutMs`, as every later
 * start of it does: a server that takes 3 s to answer `initialize` installs on a host that gives starts 30 s and
 * fails on one that gives them 1 s (the introspection had a fixed 30 s whatever the host said).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { resolveHostConfig } from '../../src/host/hostConfig.js';
import { HostPool } from '../support/hostHarness.js';
import { GREETER_SERVER, packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const SLOW_GREETER = GREETER_SERVER.replace("createInterface({ input: process.stdin }).on('line', (line) => {", "const rl = createInterface({ input: process.stdin }); rl.pause(); setTimeout(() => rl.resume(), 3000); rl.on('line', (line) => {");

describe('the introspection start of an npm server', { timeout: 120_000 }, () => {
  it("takes the host's startupTimeoutMs", async () => {
    expect(SLOW_GREETER).not.toBe(GREETER_SERVER);
    const tarball = await packServer(await pool.profile(), { name: 'slow-greeter', source: SLOW_GREETER });

    const impatient = await pool.open(await pool.profile(), { profileKind: 'standard', startupTimeoutMs: 1000 });
    const refused = (await impatient.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });

    const patient = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const installed = await patient.install(`npm:${tarball}`, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect(installed._unsafeUnwrap().plugin.operations.map((o) => o.tool_name)).toContain('greet');
  });

  it('gives each request startupTimeoutMs and the whole start introspectionTimeoutMs: many slow pages install under a tight startupTimeoutMs', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'paged-server', source: PAGED_SERVER });

    // Five pages of a second each: every request fits in 3 s, the five together do not (the whole start had 3 s before).
    const tight = await pool.open(await pool.profile(), { profileKind: 'standard', startupTimeoutMs: 3000 });
    const installed = await tight.install(`npm:${tarball}`, { canary: false });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect(installed._unsafeUnwrap().plugin.operations.map((o) => o.tool_name)).toEqual(['tool_0', 'tool_1', 'tool_2', 'tool_3', 'tool_4']);

    // The whole start still has its cap, the host's introspectionTimeoutMs.
    const capped = await pool.open(await pool.profile(), { profileKind: 'standard', startupTimeoutMs: 3000, introspectionTimeoutMs: 2500 });
    const refused = (await capped.wrap(`npm:${tarball}`))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(refused.hint).toContain('introspectionTimeoutMs');
  });

  it('defaults introspectionTimeoutMs to the larger of startupTimeoutMs and 120 s, and checks it as a time', () => {
    expect(resolveHostConfig({ startupTimeoutMs: 1000 })._unsafeUnwrap().introspectionTimeoutMs).toBe(120_000);
    expect(resolveHostConfig({ startupTimeoutMs: 300_000 })._unsafeUnwrap().introspectionTimeoutMs).toBe(300_000);
    expect(resolveHostConfig({ startupTimeoutMs: 1000, introspectionTimeoutMs: 5000 })._unsafeUnwrap().introspectionTimeoutMs).toBe(5000);
    expect(resolveHostConfig({ introspectionTimeoutMs: -1 })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS' });
  });
});

// Lists tool_0 … tool_4 one per tools/list page, each page answered a second after it is asked for.
const PAGED_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'paged', version: '1.0.0' } } });
  else if (method === 'tools/list') {
    const page = Number(params?.cursor ?? 0);
    const result = { tools: [{ name: 'tool_' + page, inputSchema: { type: 'object' } }], ...(page < 4 ? { nextCursor: String(page + 1) } : {}) };
    setTimeout(() => send({ id, result }), 1000);
  } else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;
