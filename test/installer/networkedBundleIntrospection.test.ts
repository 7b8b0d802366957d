/**
 * An MCP Bundle whose server makes its tools at run time (`tools_generated`)
 * is started once at install to list them, as an npm server without a
 * manifest is: that start gets the network the install grants, after the
 * install's consent to it, and no network without a grant. The bundle's
 * server here connects at start to a TCP service the test runs on loopback
 * and lists the tool the service names.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TrustRequest } from '../../src/installer/trust.js';
import { HostPool } from '../support/hostHarness.js';
import { bundleDirectory } from '../support/mcpbBundles.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// Connects to 127.0.0.1:<argv[2]> at start and serves the one tool the service names; exits 1 when it cannot connect.
const SERVER = `import { connect } from 'node:net';
import { createInterface } from 'node:readline';
const service = connect(Number(process.argv[2]), '127.0.0.1');
service.on('error', (error) => { process.stderr.write('cannot reach the service: ' + error.message + '\\n'); process.exit(1); });
service.once('data', (chunk) => {
  const tool = String(chunk).trim();
  const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
  createInterface({ input: process.stdin }).on('line', (line) => {
    const { id, method, params } = JSON.parse(line);
    if (id === undefined) return;
    if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'remote-bundle', version: '1.0.0' } } });
    else if (method === 'tools/list') send({ id, result: { tools: [{ name: tool, inputSchema: { type: 'object' } }] } });
    else send({ id, error: { code: -32601, message: 'no ' + method } });
  });
});
`;

let service: Server;
let connections = 0;
const made: string[] = [];

beforeAll(async () => {
  service = createServer((socket) => {
    connections++;
    socket.end('remote_tool\n');
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => service.close(() => resolve())));

async function remoteBundle(): Promise<string> {
  const { port } = service.address() as AddressInfo;
  const dir = await bundleDirectory({
    manifest_version: '0.3',
    name: 'remote_bundle',
    version: '1.0.0',
    description: 'A bundle whose server connects at start',
    author: { name: 'Tests' },
    server: { type: 'node', entry_point: 'server/remote.mjs', mcp_config: { command: 'node', args: ['${__dirname}/server/remote.mjs', String(port)] } },
    tools: [{ name: 'placeholder' }],
    tools_generated: true,
  });
  made.push(dir);
  await mkdir(join(dir, 'server'));
  await writeFile(join(dir, 'server/remote.mjs'), SERVER);
  return dir;
}

describe('an MCP Bundle whose server connects at start', { timeout: 120_000 }, () => {
  it('lists its tools with the network the install grants, asked for before the start', async () => {
    const host = await pool.open(await pool.profile());
    const asked: TrustRequest[] = [];
    const before = connections;
    const installed = await host.install(await remoteBundle(), {
      canary: false,
      grant: { network: true },
      accept: (request) => {
        if (request.stage === 'introspection') expect(connections).toBe(before);
        asked.push(request);
        return true;
      },
    });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect(installed._unsafeUnwrap().plugin.operations.map((o) => o.tool_name)).toEqual(['remote_tool']);
    expect(asked.map((r) => [r.stage ?? 'install', r.source, r.namespace_owner, r.capabilities.network, r.tools.map((t) => t.name)])).toEqual([
      ['introspection', 'directory', null, true, []],
      ['install', 'directory', null, true, ['remote_tool']],
    ]);
    expect(connections).toBeGreaterThan(before);
  });

  it('stays offline without a grant: the start cannot connect and the hint says to grant the network', async () => {
    const host = await pool.open(await pool.profile());
    const before = connections;
    const error = (await host.install(await remoteBundle(), { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(error.hint).toMatch(/^Its stderr reads like a network failure: the introspection start has no network unless the install grants it/);
    expect(connections).toBe(before);
  });
});
