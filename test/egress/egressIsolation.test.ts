/**
 * A hostile plugin with a destination list, run as its own user the way a
 * root host runs every plugin: whatever carries its connections to the host
 * must be out of its reach (no process of its sandbox runs as its user; it
 * can write no other process's memory, trace or signal none), it finds no
 * way around the proxy (raw, packet, UDP, DNS, IPv6, the host's loopback)
 * and cannot take the proxy address over,
 * and the proxy still serves it afterwards, under its own list.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EgressEvent } from '../../src/egress/EgressProxy.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { loopbackOrigin } from '../support/egressOrigin.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'egress');
const base = mkdtempSync(join(tmpdir(), 'egress-isolation-'));
const writeDir = join(base, 'data');
const PLUGIN_UID = 1_900_000_417;
const origin = loopbackOrigin();
let spawner: SandboxSpawner;
const events: EgressEvent[] = [];

beforeAll(async () => {
  mkdirSync(writeDir, { recursive: true });
  spawner = (
    await SandboxSpawner.create({
      egressResolver: { resolve: () => Promise.resolve(['203.0.113.10']), route: () => ({ host: '127.0.0.1', port: origin.port() }) },
      onEgress: (event) => events.push(event),
    })
  )._unsafeUnwrap();
}, 120_000);

afterAll(() => rmSync(base, { recursive: true, force: true }));

type Attempts = Record<'uid' | 'mem' | 'ptrace_attach' | 'ptrace_seize' | 'signal_0' | 'sigstop' | 'sigkill', unknown>;
interface AttackReport {
  readonly uid: number;
  readonly others: Record<string, Attempts>;
  readonly kill_all: string;
  readonly bypass: Record<string, string>;
  readonly proxied: string;
}

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('the egress path seen from a hostile plugin', { timeout: 120_000 }, () => {
  it.runIf(process.getuid?.() === 0)('holds nothing the plugin can write, trace or signal, has no way around it, and still serves the plugin', async () => {
    const spawned = await spawner.spawn({
      executable: unverifiedCommand(['/usr/bin/python3', '-I', join(FIXTURES, 'attacker.py'), String(origin.port()), 'http://api.test/after-attack'], FIXTURES),
      env: {},
      network: false,
      egress: ['api.test:80'],
      writeDir,
      hiddenPaths: [],
      pluginId: 'io.example.attacker',
      identity: { uid: PLUGIN_UID, gid: PLUGIN_UID },
    });
    const plugin = spawned._unsafeUnwrap();
    plugin.stdin.end();
    let out = '';
    for await (const chunk of plugin.stdout) out += String(chunk);
    const exit = await plugin.exited;
    expect(out, `${exit.description}: ${plugin.stderrTail()}`).not.toBe('');
    const report = JSON.parse(out) as AttackReport;

    expect(report.uid).toBe(PLUGIN_UID);
    // No other process of the sandbox runs as the plugin's user, so none is the plugin's to take over.
    expect(Object.values(report.others).map((attempts) => attempts.uid)).not.toContain(PLUGIN_UID);
    for (const [pid, attempts] of Object.entries(report.others)) {
      expect({ pid, ...attempts }).toEqual({ pid, uid: attempts.uid, mem: 'EACCES', ptrace_attach: 'EPERM', ptrace_seize: 'EPERM', signal_0: 'EPERM', sigstop: 'EPERM', sigkill: 'EPERM' });
    }
    expect(report.kill_all).toBe('ESRCH');
    // Under the launcher Landlock refuses every TCP bind and every connect but to the proxy's port, before the network is asked.
    const tcp = (refusal: string): string => (spawner.backendName === 'landlock' ? 'EACCES' : refusal);
    expect(report.bypass).toEqual({
      raw: 'EPERM',
      packet: 'EPERM',
      udp_dns: 'ENETUNREACH',
      dns_lookup: 'gaierror',
      tcp_public: tcp('ENETUNREACH'),
      tcp_host_loopback: tcp('ECONNREFUSED'),
      tcp6_public: tcp('ENETUNREACH'),
      tcp6_proxy_port: 'ECONNREFUSED',
      listen_proxy_address: tcp('EADDRINUSE'),
      listen_any_address: tcp('EADDRINUSE'),
    });
    expect(report.proxied).toBe('HTTP/1.1 200 OK');
    expect(events.filter((e) => e.plugin_id === 'io.example.attacker')).toEqual([
      { plugin_id: 'io.example.attacker', allowed: true, method: 'GET', host: 'api.test', port: 80, address: '203.0.113.10' },
    ]);
  });
});
