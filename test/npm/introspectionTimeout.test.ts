/**
 * The one start of an npm server at install, to list its tools, gets the host's `startupTimeoutMs`, as every later
 * start of it does: a server that takes 3 s to answer `initialize` installs on a host that gives starts 30 s and
 * fails on one that gives them 1 s (the introspection had a fixed 30 s whatever the host said).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
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
});
