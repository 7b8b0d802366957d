/**
 * The egress allowlist end to end: real bubblewrap sandboxes, the host's
 * listener in each sandbox's network namespace (opened by the real listener
 * helper), the host's proxy, loopback HTTP and HTTPS origins standing in for
 * remote APIs. Test names resolve, through the proxy's resolver hook, to
 * public documentation addresses (TEST-NET-3) that the hook's route dials on
 * loopback, so every check runs on real addresses and no traffic leaves the
 * machine.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EgressEvent, EgressResolver } from '../../src/egress/EgressProxy.js';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { SandboxSpawner, type SandboxSpawnRequest } from '../../src/sandbox/SandboxSpawner.js';
import { eventually } from '../support/eventually.js';
import { nodeBinDir } from '../support/otherNode.js';
import { killAllWith, processesWith } from '../support/processes.js';
import { PYTHON3_REAL } from '../support/python.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'egress');
const base = mkdtempSync(join(tmpdir(), 'egress-sandbox-'));
const installRoot = join(base, 'plugin');
const dataDir = join(base, 'data');
const certFile = join(installRoot, 'cert.pem');
const hostSocket = join(installRoot, 'host.sock');

const ADDRESSES: Readonly<Record<string, string>> = {
  'api.test': '203.0.113.10',
  'other.test': '203.0.113.11',
  'private.test': '10.20.30.40',
  'meta.test': '169.254.169.254',
};
const DESTINATIONS = ['api.test', 'private.test', 'meta.test', 'rebind.test:80'];

let httpPort = 0;
let httpsPort = 0;
const origins: Server[] = [];
const reached: string[] = [];
const events: EgressEvent[] = [];
let rebindLookups = 0;
let spawner: SandboxSpawner;
let node22: string;
const started: PluginProcess[] = [];
const markers: string[] = [];

const resolver: EgressResolver = {
  resolve: (name) => {
    // The first answer is public, every later one loopback: a rebinding name.
    if (name === 'rebind.test') return Promise.resolve([rebindLookups++ === 0 ? '203.0.113.12' : '127.0.0.1']);
    const address = ADDRESSES[name];
    return address === undefined ? Promise.reject(new Error(`ENOTFOUND ${name}`)) : Promise.resolve([address]);
  },
  route: (address, port) => (address.startsWith('203.0.113.') ? { host: '127.0.0.1', port: port === 443 ? httpsPort : httpPort } : { host: address, port }),
};

function answer(req: IncomingMessage, res: ServerResponse): void {
  reached.push(`${req.headers.host ?? ''}${req.url ?? ''}`);
  res.end(`origin ${req.headers.host ?? ''}${req.url ?? ''}`);
}

function listening(server: Server): Promise<number> {
  origins.push(server);
  return new Promise((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, () => resolve((server.address() as AddressInfo).port)));
}

beforeAll(async () => {
  mkdirSync(installRoot, { recursive: true });
  mkdirSync(dataDir, { recursive: true });
  const key = join(base, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', certFile, '-days', '1', '-subj', '/CN=api.test', '-addext', 'subjectAltName=DNS:api.test'], { stdio: 'ignore' });
  httpPort = await listening(createHttpServer(answer));
  const unixServer = createHttpServer(answer);
  origins.push(unixServer);
  await new Promise<void>((resolve) => unixServer.listen(hostSocket, resolve));
  httpsPort = await listening(createHttpsServer({ key: readFileSync(key), cert: readFileSync(certFile) }, answer));
  node22 = join(await nodeBinDir(), 'node');
  spawner = (await SandboxSpawner.create({ egressResolver: resolver, onEgress: (e) => events.push(e) }))._unsafeUnwrap();
}, 120_000);

afterAll(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  markers.forEach(killAllWith);
  for (const server of origins) server.close();
  rmSync(base, { recursive: true, force: true });
});

function request(argv: readonly string[], readable: readonly string[], overrides: Partial<SandboxSpawnRequest> = {}): SandboxSpawnRequest {
  return {
    executable: unverifiedCommand(argv, installRoot, readable),
    env: { NODE_EXTRA_CA_CERTS: certFile, PLUGIN_OWN: 'kept' },
    network: false,
    egress: DESTINATIONS,
    writeDir: dataDir,
    hiddenPaths: [],
    pluginId: 'io.example.egress',
    ...overrides,
  };
}

/** Runs a client plugin to its end and parses the JSON line it prints. */
async function run(req: SandboxSpawnRequest): Promise<Record<string, unknown>> {
  const spawned = await spawner.spawn(req);
  if (spawned.isErr()) throw spawned.error;
  const plugin = spawned.value;
  started.push(plugin);
  plugin.stdin.end();
  let out = '';
  for await (const chunk of plugin.stdout) out += String(chunk);
  const exit = await plugin.exited;
  if (out.trim() === '') throw new Error(`no output (${exit.description}): ${plugin.stderrTail()}`);
  return JSON.parse(out) as Record<string, unknown>;
}

const eventsFor = (host: string): EgressEvent[] => events.filter((e) => e.host === host);

/** The listener helpers a host process started: the Python whose command line is the helper script followed by that host's pid. */
function listenerHelpersOf(hostPid: number): number[] {
  return processesWith('IP_FREEBIND').filter((pid) => {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv[argv.findIndex((arg) => arg.includes('IP_FREEBIND')) + 1] === String(hostPid);
  });
}

/** The real bubblewrap on PATH. */
const bwrapPath = (): string => execFileSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).trim();

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('egress allowlist through the host proxy', { timeout: 120_000 }, () => {
  it("lets Node 22's fetch reach a listed host over HTTPS and HTTP, and refuses everything else", async () => {
    const out = await run(
      request(
        [
          node22,
          join(FIXTURES, 'client.mjs'),
          'https://api.test/node',
          'http://api.test/plain',
          'https://other.test/',
          'http://203.0.113.10/',
          'https://private.test/',
          'http://meta.test/latest/meta-data/',
          `tcp://127.0.0.1:${httpPort}`,
          'tcp://203.0.113.10:443',
          `unix:${hostSocket}`,
          'env',
        ],
        [...nodeRuntimePaths(node22), FIXTURES],
      ),
    );
    expect(out['https://api.test/node']).toBe('200 origin api.test/node');
    expect(out['http://api.test/plain']).toBe('200 origin api.test/plain');
    expect(out['https://other.test/']).toMatch(/^error /);
    // Node's fetch tunnels plain HTTP through CONNECT too, so a destination the list refuses is a failed fetch rather than a 403 answer.
    expect(out['http://203.0.113.10/']).toMatch(/^error /);
    expect(out['https://private.test/']).toMatch(/^error /);
    // A listed name on port 80 gets its tunnel, which the proxy reads as HTTP: the refused address is a 403 answer in it.
    expect(out['http://meta.test/latest/meta-data/']).toBe('403 ');
    // Direct sockets: the plugin's namespace has no route anywhere, not even to the host's loopback; under the launcher
    // Landlock refuses a TCP connect to any port but the proxy's before the network is asked.
    const underLauncher = spawner.backendName === 'landlock';
    expect(out[`tcp://127.0.0.1:${httpPort}`]).toBe(underLauncher ? 'EACCES' : 'ECONNREFUSED');
    expect(out['tcp://203.0.113.10:443']).toBe(underLauncher ? 'EACCES' : 'ENETUNREACH');
    // A host Unix socket the plugin can see: the seccomp filter refuses to create the socket at all.
    expect(out[`unix:${hostSocket}`]).toBe('EPERM');
    // PWD is the sandbox's own (its working directory), set by bubblewrap.
    expect(out.env).toEqual(['HTTPS_PROXY', 'HTTP_PROXY', 'NODE_EXTRA_CA_CERTS', 'NODE_USE_ENV_PROXY', 'NO_PROXY', 'PLUGIN_OWN', 'PWD', 'http_proxy', 'https_proxy', 'no_proxy']);
    expect(reached).toEqual(expect.arrayContaining(['api.test/node', 'api.test/plain']));
    expect(reached.filter((r) => !r.startsWith('api.test/'))).toEqual([]);

    expect(eventsFor('api.test')).toEqual(
      expect.arrayContaining([
        { plugin_id: 'io.example.egress', allowed: true, method: 'CONNECT', host: 'api.test', port: 443, address: '203.0.113.10' },
        // The tunnel to port 80 is read as HTTP: its request is the event.
        { plugin_id: 'io.example.egress', allowed: true, method: 'GET', host: 'api.test', port: 80, address: '203.0.113.10' },
      ]),
    );
    expect(eventsFor('other.test')).toEqual([{ plugin_id: 'io.example.egress', allowed: false, method: 'CONNECT', host: 'other.test', port: 443, reason: 'not_listed' }]);
    expect(eventsFor('203.0.113.10')).toEqual([{ plugin_id: 'io.example.egress', allowed: false, method: 'CONNECT', host: '203.0.113.10', port: 80, reason: 'ip_literal_not_listed' }]);
    expect(eventsFor('private.test')).toEqual([expect.objectContaining({ allowed: false, reason: 'refused_address', address: '10.20.30.40', refused_kind: 'private' })]);
    expect(eventsFor('meta.test')).toEqual([expect.objectContaining({ allowed: false, reason: 'refused_address', address: '169.254.169.254', refused_kind: 'metadata' })]);
  });

  it("lets Python's urllib reach a listed host and refuses one not listed", async () => {
    const prefix = execFileSync(PYTHON3_REAL, ['-c', 'import sys; print(sys.prefix)'], { encoding: 'utf8' }).trim();
    const out = await run(request([PYTHON3_REAL, join(FIXTURES, 'client.py'), certFile, 'https://api.test/python', 'http://api.test/python-plain', 'https://other.test/python'], [prefix, FIXTURES]));
    expect(out).toEqual({
      'https://api.test/python': '200 origin api.test/python',
      'http://api.test/python-plain': '200 origin api.test/python-plain',
      'https://other.test/python': expect.stringMatching(/^error .*403/),
    });
    // urllib sends plain HTTP to the proxy as an absolute-form request, which the proxy forwards itself.
    expect(eventsFor('api.test')).toEqual(expect.arrayContaining([{ plugin_id: 'io.example.egress', allowed: true, method: 'GET', host: 'api.test', port: 80, address: '203.0.113.10' }]));
  });

  it('serves two plugins at once through the one proxy, each under its own list', async () => {
    const client = (id: string, egress: string[]) =>
      run(request([node22, join(FIXTURES, 'client.mjs'), `http://api.test/${id}`, `http://other.test/${id}`], [...nodeRuntimePaths(node22), FIXTURES], { egress, pluginId: id }));
    const [first, second] = await Promise.all([client('io.example.first', ['api.test:80']), client('io.example.second', ['other.test:80'])]);
    expect(first).toEqual({ 'http://api.test/io.example.first': '200 origin api.test/io.example.first', 'http://other.test/io.example.first': expect.stringMatching(/^error /) });
    expect(second).toEqual({ 'http://api.test/io.example.second': expect.stringMatching(/^error /), 'http://other.test/io.example.second': '200 origin other.test/io.example.second' });
    expect(events.filter((e) => e.plugin_id === 'io.example.first').map((e) => [e.host, e.allowed])).toEqual([['api.test', true], ['other.test', false]]);
    expect(events.filter((e) => e.plugin_id === 'io.example.second').map((e) => [e.host, e.allowed])).toEqual([['api.test', false], ['other.test', true]]);
  });

  it('refuses a name that rebinds to loopback after its first answer: the check is on the address dialled', async () => {
    const out = await run(request([node22, join(FIXTURES, 'client.mjs'), 'http://rebind.test/first', 'http://rebind.test/second'], [...nodeRuntimePaths(node22), FIXTURES]));
    expect(out).toEqual({ 'http://rebind.test/first': '200 origin rebind.test/first', 'http://rebind.test/second': '403 ' });
    expect(eventsFor('rebind.test')).toEqual([
      expect.objectContaining({ allowed: true, address: '203.0.113.12' }),
      expect.objectContaining({ allowed: false, reason: 'refused_address', address: '127.0.0.1', refused_kind: 'loopback' }),
    ]);
  });

  it('fails closed on a malformed destination list: the plugin does not start', async () => {
    const spawned = await spawner.spawn(request([node22, join(FIXTURES, 'client.mjs'), 'env'], [...nodeRuntimePaths(node22), FIXTURES], { egress: ['api.test:99999'] }));
    expect(spawned._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EGRESS_DESTINATION_INVALID', details: { pointer: '/declared_capabilities/egress/0' } });
  });

  it('forwards plain HTTP under the name it checked, whatever Host header the plugin writes', async () => {
    const spoofer = `require('http').get({ host: '127.0.0.1', port: 3128, path: 'http://api.test/spoof', headers: { host: 'other.test' }, agent: false }, (res) => {
      let body = ''; res.on('data', (c) => (body += c)); res.on('end', () => console.log(JSON.stringify({ body })));
    });`;
    expect(await run(request([process.execPath, '-e', spoofer], nodeRuntimePaths()))).toEqual({ body: 'origin api.test/spoof' });
  });

  it('caps the connections one plugin holds open through the proxy, reporting each one refused', async () => {
    // 300 idle connections: the proxy keeps the first 256 (etc/egress/proxy.json) and closes the rest at once.
    const hoarder = `const net = require('net'); let closed = 0; const open = [];
      const done = () => { console.log(JSON.stringify({ closed })); open.forEach((s) => s.destroy()); };
      (async () => {
        for (let i = 0; i < 300; i++) open.push(await new Promise((ok) => { const s = net.connect({ host: '127.0.0.1', port: 3128 }, () => ok(s)); s.on('close', () => { if (++closed === 44) done(); }); s.on('error', () => {}); }));
      })();`;
    const before = events.filter((e) => e.reason === 'connection_limit').length;
    expect(await run(request([process.execPath, '-e', hoarder], nodeRuntimePaths()))).toEqual({ closed: 44 });
    expect(events.filter((e) => e.reason === 'connection_limit').length - before).toBe(44);
    expect(events.filter((e) => e.reason === 'connection_limit').at(-1)).toEqual({ plugin_id: 'io.example.egress', allowed: false, method: '', host: '', port: 0, reason: 'connection_limit' });
  });

  it('fails closed when the egress path cannot be proved: the plugin does not start', async () => {
    // A launcher that gives sandboxes with a destination list (those it reports on) the host's network: the egress path must notice.
    const leaky = join(base, 'leaky-bwrap');
    writeFileSync(
      leaky,
      [
        '#!/bin/sh',
        `case "$*" in *--info-fd*) ;; *) exec ${bwrapPath()} "$@" ;; esac`,
        'for a; do shift; case "$a" in --unshare-net) ;; --unshare-all) set -- "$@" --unshare-all --share-net ;; *) set -- "$@" "$a" ;; esac; done',
        `exec ${bwrapPath()} "$@"`,
        '',
      ].join('\n'),
    );
    chmodSync(leaky, 0o755);
    const leakySpawner = (await SandboxSpawner.create({ bwrapPath: leaky, backend: 'bubblewrap' }))._unsafeUnwrap();
    const spawned = await leakySpawner.spawn(request([node22, join(FIXTURES, 'client.mjs'), 'env'], [...nodeRuntimePaths(node22), FIXTURES]));
    expect(spawned._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SANDBOX_UNSUPPORTED', details: { cause: 'enforcement_not_proved' } });
  });

  it('hands the plugin its environment without putting it on any command line', async () => {
    const marker = `egress-env-${process.pid}-${Math.random().toString(36).slice(2)}`;
    markers.push(marker);
    const secret = `secret-${Math.random().toString(36).slice(2)}`;
    const script = "process.stdout.write(JSON.stringify({ token: process.env.PLUGIN_TOKEN }) + '\\n'); setInterval(() => {}, 1000)";
    const spawned = await spawner.spawn(request([process.execPath, '-e', script, marker], nodeRuntimePaths(), { env: { PLUGIN_TOKEN: secret } }));
    const plugin = spawned._unsafeUnwrap();
    started.push(plugin);
    const [line] = (await once(createInterface({ input: plugin.stdout }), 'line')) as [string];
    expect(JSON.parse(line)).toEqual({ token: secret });
    const holders = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(secret);
        } catch {
          return false;
        }
      });
    expect(holders).toEqual([]);
  });

  it('serves connections when an egress listener throws', async () => {
    const onEgress = (): void => {
      throw new Error('listener failure');
    };
    const throwing = (await SandboxSpawner.create({ egressResolver: resolver, onEgress }))._unsafeUnwrap();
    const spawned = await throwing.spawn(request([node22, join(FIXTURES, 'client.mjs'), 'http://api.test/throwing'], [...nodeRuntimePaths(node22), FIXTURES]));
    const plugin = spawned._unsafeUnwrap();
    started.push(plugin);
    let out = '';
    for await (const chunk of plugin.stdout) out += String(chunk);
    expect(JSON.parse(out)).toEqual({ 'http://api.test/throwing': '200 origin api.test/throwing' });
  });

  it('describes the destinations as the only way out', () => {
    const policy = spawner.describe({ network: false, egress: DESTINATIONS, writeDir: dataDir, installRoot, hiddenPaths: [] });
    expect(policy).toMatchObject({ network: false, unixSocketsBlocked: true, egress: DESTINATIONS });
  });

  it('a host killed by SIGKILL leaves no plugin, listener helper or file behind', async () => {
    const marker = `egress-${process.pid}-${Math.random().toString(36).slice(2)}`;
    markers.push(marker);
    const tmpBefore = readdirSync(tmpdir()).sort();
    const host = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'dying-host.ts'), marker, dataDir, String(httpPort), join(node22, '..')], { stdio: ['ignore', 'pipe', 'inherit'] });
    const ready = await new Promise<string>((resolve) => host.stdout.on('data', (c: Buffer) => resolve(c.toString())));
    expect(ready).toBe('ready origin api.test/\n');
    // The plugin and bubblewrap around it, all carrying the marker on their command lines, and the host's listener helper.
    expect(processesWith(marker).length).toBeGreaterThanOrEqual(2);
    expect(listenerHelpersOf(host.pid!)).toHaveLength(1);
    host.kill('SIGKILL');
    expect(await eventually(() => processesWith(marker).length === 0 && listenerHelpersOf(host.pid!).length === 0)).toBe(true);
    expect(readdirSync(tmpdir()).filter((name) => !tmpBefore.includes(name) && name.includes('egress'))).toEqual([]);
  });
});
