/**
 * What the introspection start of a server says when it fails on a host path
 * its sandbox does not show: a Unix socket it connects to while it starts (a
 * Docker or database client's /var/run/docker.sock, a PostgreSQL socket) and
 * a file it reads at start. Egress grants carry TCP to host:port destinations,
 * never a Unix socket, and no grant shows a host path outside the plugin's
 * own directories: the hint says so instead of offering `--grant-egress`, or
 * only the generic advice. A call or a start of the installed plugin failing
 * in those words gets the same hint. Real servers packed with `npm pack`, real
 * sandboxes, a real socket and file on the host.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sandboxPathHints } from '../../src/installer/sandboxPathHints.js';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from '../npm/npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());

// Outside every path a sandbox shows (its system directories, install root and data directory): the host's /tmp.
const hostDir = mkdtempSync(join(tmpdir(), 'sandbox-path-hints-'));
const socketPath = join(hostDir, 'daemon.sock');
const configPath = join(hostDir, 'config.json');
let daemon: Server;

beforeAll(async () => {
  writeFileSync(configPath, '{}');
  daemon = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => daemon.listen(socketPath, resolve));
});
afterAll(async () => {
  await new Promise((resolve) => daemon.close(resolve));
  await pool.cleanup();
  rmSync(hostDir, { recursive: true, force: true });
});

const NPM_TIMEOUT = { timeout: 120_000 };

// As a Docker or database client does: connect to the daemon's socket first, print the error, give up.
const socketClient = (path: string): string => `#!/usr/bin/env node
import { connect } from 'node:net';
connect(${JSON.stringify(path)}).on('connect', () => process.exit(0)).on('error', (error) => {
  process.stderr.write('Error: cannot reach the daemon: ' + error.message + '\\n');
  process.exit(1);
});
`;

// As a server that reads its configuration from a fixed host path at start: the uncaught error ends it.
const configReader = (path: string): string => `#!/usr/bin/env node
import { readFileSync } from 'node:fs';
readFileSync(${JSON.stringify(path)}, 'utf8');
`;

async function introspectionFailure(name: string, source: string, grant?: { readonly network: boolean }) {
  const tarball = await packServer(await pool.profile(), { name, source });
  const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
  const error = (await host.install(`npm:${tarball}`, { canary: false, ...(grant === undefined ? {} : { grant, accept: () => true }) }))._unsafeUnwrapErr();
  expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
  return { hint: error.hint, stderr: String(error.details['stderr_tail']) };
}

describe('introspection hints for host paths the sandbox does not show', NPM_TIMEOUT, () => {
  it('a Unix socket connect without network: names the socket, says it is outside the sandbox, offers no egress grant', async () => {
    const { hint, stderr } = await introspectionFailure('socket-client', socketClient(socketPath));
    expect(stderr).toContain(socketPath);
    expect(hint).toContain(`connects to the Unix socket ${socketPath}`);
    expect(hint).toContain('outside what its sandbox shows');
    expect(hint).toContain('--grant-egress carries TCP to host:port destinations only, never a Unix socket');
    // The remedies offered are ones that can work: not a destination grant for a socket.
    expect(hint).not.toContain('or --grant-egress host:port');
  });

  it('a Unix socket connect with the network granted: the socket is still outside the sandbox', async () => {
    const { hint, stderr } = await introspectionFailure('socket-client-networked', socketClient(socketPath), { network: true });
    expect(stderr).toContain(`ENOENT ${socketPath}`);
    expect(hint).toContain(`connects to the Unix socket ${socketPath}`);
    expect(hint).toContain('outside what its sandbox shows');
  });

  it('a file read at start that exists on the host but not in the sandbox: says so, and what the sandbox shows instead', async () => {
    const { hint, stderr } = await introspectionFailure('config-reader', configReader(configPath));
    expect(stderr).toContain(`ENOENT: no such file or directory, open '${configPath}'`);
    expect(hint).toContain(`${configPath} exists on the host but is outside what its sandbox shows`);
    expect(hint).toContain('its data directory');
  });

  it('a file that does not exist on the host either gets no such claim', async () => {
    const missing = join(hostDir, 'missing.json');
    const { hint, stderr } = await introspectionFailure('missing-reader', configReader(missing));
    expect(stderr).toContain(`open '${missing}'`);
    expect(hint).not.toContain('outside what its sandbox shows');
  });
});

// An installed plugin's tool that connects to the daemon's socket at each call; with --read-config, a start of the
// installed plugin reads a host file first (the install's introspection start, whose data directory is named
// npm-introspection, skips it, so that the install can list the tools).
const daemonClient = (socket: string, config: string): string => `#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
if (process.argv.includes('--read-config') && !String(process.env.HOME).includes('npm-introspection')) readFileSync(${JSON.stringify(config)}, 'utf8');
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'daemon-client', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: ['containers', 'rows'].map((name) => ({ name, inputSchema: { type: 'object' } })) } });
  // As a PostgreSQL client passes on libpq's words in a tool result.
  else if (method === 'tools/call' && params.name === 'rows') {
    send({ id, result: { isError: true, content: [{ type: 'text', text: 'connection to server on socket "' + ${JSON.stringify(socket)} + '" failed: No such file or directory' }] } });
  } else if (method === 'tools/call') {
    connect(${JSON.stringify(socket)})
      .on('connect', () => send({ id, result: { content: [{ type: 'text', text: 'connected' }] } }))
      .on('error', (error) => send({ id, error: { code: -32603, message: 'cannot reach the daemon: ' + error.message } }));
  } else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('hints of an installed plugin\'s calls and starts for host paths the sandbox does not show', NPM_TIMEOUT, () => {
  async function installed(args: readonly string[]) {
    const tarball = await packServer(await pool.profile(), { name: 'daemon-client', source: daemonClient(socketPath, configPath) });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    const install = await host.install(`npm:${tarball}`, { canary: false, args: [...args] });
    expect(install.isOk(), JSON.stringify(install.isErr() ? install.error : null)).toBe(true);
    const call = async (tool: string) => (await host.call(`plug.daemon-client.${tool}`, {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    return { containers: await call('containers'), rows: await call('rows') };
  }

  it('a call that connects to a host Unix socket: the socket hint, not the network one offering --grant-egress', async () => {
    const { containers: error, rows } = await installed([]);
    expect(error.message).toContain(socketPath);
    expect(error.hint).toContain(`It connects to the Unix socket ${socketPath}, which is outside what its sandbox shows`);
    expect(error.hint).not.toContain('or of the destinations it needs (--grant-egress host:port)');
    // The same, named in a tool result's text in libpq's words.
    expect(rows.code).toBe('PLUGIN_TOOL_ERROR');
    expect(rows.hint).toContain(`It connects to the Unix socket ${socketPath}, which is outside`);
  });

  it('a start that fails reading a host file: names the file as outside the sandbox', async () => {
    const { containers: error } = await installed(['--read-config']);
    expect(String(error.details['stderr_tail'])).toContain(`open '${configPath}'`);
    expect(error.hint).toContain(`${configPath} exists on the host but is outside what its sandbox shows`);
  });
});

describe('sandboxPathHints: what the sandbox shows, as it mounts it', () => {
  // The profile is masked, but the plugin's own trees inside it are mounted over the mask.
  const view = { own: ['/profile/plugins/p', '/profile/data/p'], system: ['/usr', '/etc'], hidden: ['/profile', '/etc/ssl/private'] };

  it('a socket in the plugin\'s own data directory is shown: without network it takes --grant-network', () => {
    const said = sandboxPathHints('Error: connect EPERM /profile/data/p/helper.sock', view, false);
    expect(said).toEqual({ socket: true, hint: expect.stringContaining('a plugin without network may use no Unix socket at all') as string });
    expect(sandboxPathHints('Error: connect ECONNREFUSED /profile/data/p/helper.sock', view, true)).toBeUndefined();
  });

  it('a socket elsewhere in the masked profile, or under a masked system path, is hidden', () => {
    expect(sandboxPathHints('dial unix /profile/data/other/x.sock: connect: no such file or directory', view, true)?.hint).toContain('hides from every plugin');
    expect(sandboxPathHints("Error 2 connecting to unix socket: /etc/ssl/private/agent.sock. No such file or directory.", view, true)?.hint).toContain(
      'Unix socket /etc/ssl/private/agent.sock, which its sandbox hides',
    );
  });

  it('names a libpq socket outside, and nothing for the sandbox\'s own /proc or a TCP address', () => {
    expect(sandboxPathHints('connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed', view, true)?.hint).toContain(
      'Unix socket /var/run/postgresql/.s.PGSQL.5432, which is outside what its sandbox shows (its system directories (/usr, /etc)',
    );
    expect(sandboxPathHints("open /proc/1/environ: permission denied\nconnect ECONNREFUSED 127.0.0.1:5432", view, false)).toBeUndefined();
  });
});
