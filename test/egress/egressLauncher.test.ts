/**
 * A plugin with an egress destination list under the Landlock launcher
 * (backend auto, the launcher built from native/launcher.c): real sandboxes,
 * the real listener helper and proxy, a loopback origin standing in for a
 * remote API. The plugin is a Python script that reports what it saw and
 * what each of its attempts got, as one JSON object.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import type { EgressEvent } from '../../src/egress/EgressProxy.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { landlockBackend } from '../../src/sandbox/backends.js';
import { probeEgress } from '../../src/sandbox/egressProbe.js';
import { findLauncher } from '../../src/sandbox/launcherBinary.js';
import { pluginSeccompFilter } from '../../src/sandbox/seccompFilter.js';
import { SandboxSpawner, type SandboxSpawnRequest } from '../../src/sandbox/SandboxSpawner.js';
import { loopbackOrigin } from '../support/egressOrigin.js';

const base = mkdtempSync(join(tmpdir(), 'egress-launcher-'));
const installRoot = join(base, 'plugin');
const writeDir = join(base, 'data');
const ABSTRACT_NAME = `egress-launcher-${process.pid}`;

// What the plugin tries; every outcome is 'done' or the errno's name.
const PLUGIN = `
import errno, json, socket, sys
proxy_port, origin_port = int(sys.argv[1]), int(sys.argv[2])
def outcome(action):
    try:
        action()
        return 'done'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def connect(family, address):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(address)
def bind(address, protocol=0):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, protocol) as s:
        s.bind(address)
        s.listen(1)
def mptcp_connect(address):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262) as s:
        s.settimeout(5)
        s.connect(address)
def proxied(url):
    with socket.create_connection(('127.0.0.1', proxy_port), timeout=10) as s:
        s.sendall(('GET %s HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' % url).encode())
        answer = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.decode().partition('\\r\\n\\r\\n')
    return head.split('\\r\\n')[0] + ' ' + body
def fast_open(address):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.sendto(b'x', 0x20000000, address)
def read(path):
    with open(path, 'rb') as f:
        return f.read().decode().replace('\\0', ' ').strip()
print(json.dumps({
    'process_1': read('/proc/1/cmdline'),
    'allowed': proxied('http://api.test/allowed'),
    'refused': proxied('http://other.test/refused'),
    'origin_direct': outcome(lambda: connect(socket.AF_INET, ('127.0.0.1', origin_port))),
    'other_port_inside': outcome(lambda: connect(socket.AF_INET, ('127.0.0.1', proxy_port + 1))),
    'public_direct': outcome(lambda: connect(socket.AF_INET, ('203.0.113.10', 443))),
    'bind_listener': outcome(lambda: bind(('127.0.0.1', 0))),
    'bind_any': outcome(lambda: bind(('0.0.0.0', 8080))),
    'mptcp_bind': outcome(lambda: bind(('127.0.0.1', 8081), 262)),
    'mptcp_other_port': outcome(lambda: mptcp_connect(('127.0.0.1', proxy_port + 1))),
    'fast_open_other_port': outcome(lambda: fast_open(('127.0.0.1', proxy_port + 1))),
    'abstract_host': outcome(lambda: connect(socket.AF_UNIX, '\\0' + sys.argv[3])),
    'tcp_sockets': read('/proc/net/tcp'),
}))
`;

const origin = loopbackOrigin();
let abstractServer: Server;
let abstractHits = 0;
let spawner: SandboxSpawner;
const events: EgressEvent[] = [];

beforeAll(async () => {
  mkdirSync(installRoot, { recursive: true });
  mkdirSync(writeDir, { recursive: true });
  // A host socket in the abstract namespace: no plugin may reach it.
  abstractServer = createServer((socket) => {
    abstractHits++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => abstractServer.listen(`\0${ABSTRACT_NAME}`, resolve));
  spawner = (
    await SandboxSpawner.create({
      backend: 'auto',
      egressResolver: {
        resolve: (name) => (name === 'api.test' || name === 'other.test' ? Promise.resolve(['203.0.113.10']) : Promise.reject(new Error(`ENOTFOUND ${name}`))),
        route: () => ({ host: '127.0.0.1', port: origin.port() }),
      },
      onEgress: (event) => events.push(event),
    })
  )._unsafeUnwrap();
}, 120_000);

afterAll(() => {
  abstractServer.close();
  rmSync(base, { recursive: true, force: true });
});

function request(): SandboxSpawnRequest {
  return {
    executable: unverifiedCommand(['/usr/bin/python3', '-I', '-c', PLUGIN, String(proxySettings.sandboxProxyPort), String(origin.port()), ABSTRACT_NAME], installRoot),
    env: {},
    network: false,
    egress: ['api.test:80'],
    writeDir,
    hiddenPaths: [],
    pluginId: 'io.example.launcher-egress',
  };
}

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('a plugin with a destination list under the Landlock launcher', { timeout: 120_000 }, () => {
  it.runIf(process.getuid?.() === 0)('runs under the launcher, reaches a listed destination only through the proxy, and nothing else', async () => {
    const spawned = await spawner.spawn(request());
    const plugin = spawned._unsafeUnwrap();
    plugin.stdin.end();
    let out = '';
    for await (const chunk of plugin.stdout) out += String(chunk);
    const exit = await plugin.exited;
    expect(out, `${exit.description}: ${plugin.stderrTail()}`).not.toBe('');
    const report = JSON.parse(out) as Record<string, string>;

    // The sandbox's process 1 is the launcher's (bubblewrap's would be bwrap), and describe says so.
    expect(report.process_1).toBe('mcp-plugin-launcher');
    expect(spawner.describe({ ...request(), installRoot }).backend).toBe('landlock');
    expect(report.allowed).toBe(`HTTP/1.1 200 OK origin api.test/allowed`);
    expect(report.refused).toMatch(/^HTTP\/1\.1 403 /);
    expect(events.filter((e) => e.plugin_id === 'io.example.launcher-egress').map((e) => [e.host, e.allowed])).toEqual([
      ['api.test', true],
      ['other.test', false],
    ]);
    // Landlock: a TCP connect to any port but the proxy's, and any bind, is refused before the network is asked.
    expect(report.origin_direct).toBe('EACCES');
    expect(report.other_port_inside).toBe('EACCES');
    expect(report.public_direct).toBe('EACCES');
    expect(report.bind_listener).toBe('EACCES');
    expect(report.bind_any).toBe('EACCES');
    // MPTCP, which Landlock's TCP rules do not see (its bind and connect reached the namespace), is refused by seccomp.
    expect(report.mptcp_bind).toBe('EPERM');
    expect(report.mptcp_other_port).toBe('EPERM');
    // So is a send with MSG_FASTOPEN, which connects without connect() (it reached the namespace: ECONNREFUSED).
    expect(report.fast_open_other_port).toBe('EPERM');
    // No Unix socket at all without network (the seccomp program), so none of the host's abstract ones.
    expect(report.abstract_host).toBe('EPERM');
    expect(abstractHits).toBe(0);
    // The namespace's own sockets only: the host's listener on the proxy port (0C38 is 3128), none of the host's.
    const localPorts = report
      .tcp_sockets!.split('\n')
      .slice(1)
      .map((line) => parseInt(line.trim().split(/\s+/)[1]!.split(':')[1]!, 16));
    expect(localPorts).toContain(proxySettings.sandboxProxyPort);
    expect(localPorts).not.toContain(origin.port());
    expect(exit.code).toBe(0);
  });

  it('proves the egress path of the launcher before first use: one that keeps the host network fails closed', async () => {
    const launcher = findLauncher()._unsafeUnwrap();
    // A launcher that drops its network namespace (and the proxy port, which it refuses without one).
    const leaky = join(base, 'leaky-launcher');
    writeFileSync(
      leaky,
      [
        '#!/bin/sh',
        'skip=0; for a; do shift; if [ $skip = 1 ]; then skip=0; continue; fi; case "$a" in --unshare-net) ;; --egress-port) skip=1 ;; *) set -- "$@" "$a" ;; esac; done',
        `exec ${launcher} "$@"`,
        '',
      ].join('\n'),
    );
    chmodSync(leaky, 0o755);
    const seccomp = { offline: pluginSeccompFilter(false)!, networked: pluginSeccompFilter(true)! };
    const backend = landlockBackend(leaky, seccomp);
    const proved = await probeEgress(backend, { installRoot, writeDir });
    expect(proved._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_SANDBOX_UNSUPPORTED', details: { cause: 'enforcement_not_proved' } });
    const honest = await probeEgress(landlockBackend(launcher, seccomp), { installRoot, writeDir });
    expect(honest.isOk(), JSON.stringify(honest.isErr() ? honest.error : undefined)).toBe(true);
  });
});
