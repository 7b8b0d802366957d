/**
 * A server whose tools start a helper daemon on a Unix socket in its data
 * directory, as @mobilenext/mobile-mcp 1.0.4 does (its Go `mobilecli`
 * listens on `$HOME/.mobilecli/daemon.sock`). Without network the sandbox's
 * seccomp program refuses every `AF_UNIX` socket, and the call failed with
 * Go's "listen unix …: socket: operation not permitted" and only the generic
 * "read details.result" hint: it now gets the network hint, whose grant is
 * what lets a Unix socket through (docs/security-model.md, "Unix sockets").
 * Node's own wording of the same refusal is checked for real, with the grant
 * making the listen work. Packed locally with `npm pack`.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// node_daemon listens on a Unix socket in its HOME (the data directory) and answers isError with Node's words when refused;
// go_daemon answers with what mobile-mcp passed on from mobilecli, a Go program, for the same refusal.
const DAEMON_SERVER = `#!/usr/bin/env node
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const tools = ['node_daemon', 'go_daemon'].map((name) => ({ name, inputSchema: { type: 'object' } }));
const socket = join(process.env.HOME, 'daemon.sock');
const listened = () => new Promise((resolve) => { const server = createServer(); server.on('error', (error) => resolve(error.message)).listen(socket, () => server.close(() => resolve('listening on daemon.sock'))); });
createInterface({ input: process.stdin }).on('line', async (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'daemon', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools } });
  if (params.name === 'go_daemon') return send({ id, result: { isError: true, content: [{ type: 'text', text: 'Error: Command failed: mobilecli devices\\ndaemon did not start listening within 5s\\ndaemon: listen on ' + socket + ': listen unix ' + socket + ': socket: operation not permitted' }] } });
  const said = await listened();
  send({ id, result: { isError: said !== 'listening on daemon.sock', content: [{ type: 'text', text: said }] } });
});
`;

describe('npm: a server whose tools start a daemon on a Unix socket', { timeout: 120_000 }, () => {
  it('fails offline with the network hint, in Go and Node wording, and listens with the network granted', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'unix-daemon', source: DAEMON_SERVER });
    const offlineDir = await pool.profile();
    const installer = await pool.open(offlineDir, { profileKind: 'standard' });
    const installed = (await installer.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(offlineDir, { profileKind: 'standard' });
    for (const [tool, words] of [['go_daemon', /socket: operation not permitted/], ['node_daemon', /listen EPERM/]] as const) {
      const failed = (await host.call(`plug.${installed.plugin.name}.${tool}`, {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
      expect(failed.code).toBe('PLUGIN_TOOL_ERROR');
      expect(JSON.stringify(failed.details['result'])).toMatch(words);
      expect(failed.hint).toMatch(/^The plugin has no network in its sandbox .*--grant-network/);
      expect(failed.hint).toContain('Unix socket');
    }

    const networkedDir = await pool.profile();
    const granting = await pool.open(networkedDir, { profileKind: 'standard' });
    (await granting.install(`npm:${tarball}`, { canary: false, grant: { network: true, fs_write_dir: '', env_allow: [] } }))._unsafeUnwrap();
    await granting.close();
    const networked = await pool.open(networkedDir, { profileKind: 'standard' });
    const listening = (await networked.call(`plug.${installed.plugin.name}.node_daemon`, {}, { maxRisk: 'destructive' }))._unsafeUnwrap();
    expect(textOf(listening)).toBe('listening on daemon.sock');
  });
});
