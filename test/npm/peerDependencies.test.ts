/**
 * A published server's peer dependencies are part of its tree. npm installs
 * them beside the package, not inside it (@supabase/mcp-server-supabase@0.13.0
 * declares @modelcontextprotocol/server and zod as peers and failed its start
 * with ERR_MODULE_NOT_FOUND), so the host moves them into the package's
 * node_modules before staging. The peer here is `ms` from the registry, the
 * server a local `npm pack`.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// Imports its peer before it answers anything, as a server importing its SDK peer does.
const PEER_SERVER = `#!/usr/bin/env node
import ms from 'ms';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'peer-user', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'duration', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: String(ms('2h')) }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: a server with peer dependencies', { timeout: 180_000 }, () => {
  it('installs with its peers inside its own tree, and its tool answers', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'peer-user', source: PEER_SERVER, peerDependencies: { ms: '2.1.3' } });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    const installed = await host.install(`npm:${tarball}`, { canary: false });
    expect(installed.isOk() ? 'installed' : installed.error.message).toBe('installed');
    expect(textOf((await host.call('plug.peer-user.duration', {}, { maxRisk: 'destructive' }))._unsafeUnwrap())).toBe('7200000');
  });
});
