/**
 * The sandbox hints of a failed call reach what a server says after its start
 * too: a write into its own read-only package directory at a tool call, as a
 * tool error in Python's words (`[Errno 30] Read-only file system: '<path>'`)
 * or as a crash whose stderr tail holds Node's uncaught EROFS, and a socket
 * call the sandbox refused, in Python's words, which name no path and no call
 * (`[Errno 1] Operation not permitted`, `[Errno 13] Permission denied`), as a
 * tool error or a crash. Real plugins: a Python server run by python3 and a
 * Node server packed with `npm pack`, each in its sandbox.
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from '../npm/npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const OFFLINE_HINT = /^The plugin has no network in its sandbox .*\(CLI --grant-network\)/;

// `save` writes cache.json next to the server, uncaught: the process dies of the EROFS (EACCES under Landlock) at the call.
const CRASHING_WRITER = `#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'crashing-writer', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools: [{ name: 'save', inputSchema: { type: 'object' } }] } });
  writeFileSync(new URL('./cache.json', import.meta.url), '{}');
  send({ id, result: { content: [{ type: 'text', text: 'saved' }] } });
});
`;

describe('sandbox hints for what a server does at a call', { timeout: 120_000 }, () => {
  it('names the install-root path a Node server crashed writing at a tool call', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'crashing-writer', source: CRASHING_WRITER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    const root = (await host.info('crashing-writer'))._unsafeUnwrap().executable.install_root;
    const error = (await host.call('plug.crashing-writer.save', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_CRASHED');
    expect(String(error.details['stderr_tail'])).toMatch(/(EROFS|EACCES|EPERM): .*cache\.json/);
    const written = String(error.details['install_root_write']);
    expect(written).toBe(join(root, 'bin', 'cache.json'));
    expect(error.hint.startsWith(`The plugin tried to write ${written}, inside its install root, which is read-only in the sandbox`)).toBe(true);
    expect(error.hint).toContain('report it upstream');
  });

  // The words differ by backend: Landlock refuses the connect (Errno 13), bubblewrap's own loopback has no listener (Errno 111).
  it.each(['landlock', 'bubblewrap'] as const)("reads a Python server's socket and own-directory failures, with no path, as the sandbox's (%s)", async (backend) => {
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/py-sandboxed-calls'));
    const host = await pool.open(await pool.profile(), { activation: 'immediate', sandbox: { backend } });
    const installed = await host.install(pkg, { canary: false });
    if (installed.isErr()) throw installed.error;
    const root = (await host.info('py-sandboxed-calls'))._unsafeUnwrap().executable.install_root;
    const call = async (tool: string) => (await host.call(`plug.py-sandboxed-calls.${tool}`, {}))._unsafeUnwrapErr();

    for (const tool of ['unix_socket', 'tcp_connect', 'vsock']) {
      const error = await call(tool);
      expect(error.code, tool).toBe('PLUGIN_TOOL_ERROR');
      expect(error.message, tool).toMatch(/^\[Errno (1|13|111)\] [A-Za-z ]+$/);
      expect(error.hint, tool).toMatch(OFFLINE_HINT);
    }
    // A file's errno names the file: no network hint for it.
    const file = await call('read_proc');
    expect(file.message).toMatch(/^\[Errno 13\] Permission denied: '\/proc\/1\/mem'$/);
    expect(file.hint).not.toContain('no network');

    const own = await call('write_own');
    expect(own.message).toMatch(/^\[Errno (13|30)\] /);
    expect(own.details['install_root_write']).toBe(join(root, 'bin', 'cache.json'));
    expect(own.hint.startsWith(`The plugin tried to write ${join(root, 'bin', 'cache.json')}, inside its install root`)).toBe(true);

    // Uncaught, the same connect kills the server: the traceback on its stderr says it.
    const crashed = await call('crash_connect');
    expect(crashed.code).toBe('PLUGIN_CRASHED');
    expect(String(crashed.details['stderr_tail'])).toMatch(/Error: \[Errno (13|111)\] /);
    expect(crashed.hint).toMatch(OFFLINE_HINT);
  });
});
