/**
 * The enforcement probe listens on the host's loopback and counts the
 * connections it gets as the sandbox's escape. Any process of the host's
 * network reaches such a listener, and a networked plugin (under another
 * host process, a gateway that keeps serving) reads its port in
 * /proc/net/tcp the moment it listens: counting every connection let that
 * plugin fail the probe of a host starting up, which then refused to run
 * any plugin, or under `backend: 'auto'` fell back from the launcher to
 * bubblewrap (review R6 F5). Here this test process plays that plugin,
 * connecting to each loopback listener of its own as soon as it appears
 * (never to another process's, which other tests may be counting).
 */
import { copyFileSync, chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { bubblewrapBackend } from '../../src/sandbox/backends.js';
import { probeEgress } from '../../src/sandbox/egressProbe.js';
import { pluginSeccompFilter } from '../../src/sandbox/seccompFilter.js';

const base = mkdtempSync(join(tmpdir(), 'probe-listeners-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** The inodes of this process's own sockets. */
function ownSocketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    const target = (() => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    })();
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match) inodes.add(match[1]!);
  }
  return inodes;
}

/** Connects to every 127.0.0.1 listener of this process that appears after the start, until stopped. */
function connectToNewListeners(): { stop(): number } {
  const ignored = new Set<string>();
  const held: Socket[] = [];
  const scan = (record: boolean): void => {
    const own = ownSocketInodes();
    for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [address, port] = (fields[1] ?? '').split(':');
      const inode = fields[9] ?? '';
      if (fields[3] !== '0A' || address !== '0100007F' || !own.has(inode) || ignored.has(inode)) continue;
      ignored.add(inode);
      if (!record) continue;
      const socket = connect({ host: '127.0.0.1', port: parseInt(port!, 16) });
      socket.on('error', () => undefined);
      held.push(socket);
    }
  };
  scan(false);
  const timer = setInterval(() => scan(true), 1);
  return {
    stop(): number {
      clearInterval(timer);
      for (const socket of held) socket.destroy();
      return held.length;
    },
  };
}

/** A copy of bubblewrap at a path no probe ran for yet in this process (outcomes are kept per launcher). */
function freshBubblewrap(): string {
  const dir = mkdtempSync(join(base, 'bin-'));
  chmodSync(dir, 0o755);
  copyFileSync('/usr/bin/bwrap', join(dir, 'bwrap'));
  chmodSync(join(dir, 'bwrap'), 0o755);
  return join(dir, 'bwrap');
}

describe('the enforcement probe beside a process that connects to its listener', { timeout: 120_000 }, () => {
  it('still proves bubblewrap: only the probe\'s own connection counts', async () => {
    const bwrap = freshBubblewrap();
    const intruder = connectToNewListeners();
    const created = await SandboxSpawner.create({ backend: 'bubblewrap', bwrapPath: bwrap });
    const connected = intruder.stop();
    expect(connected).toBeGreaterThan(0);
    expect(created.isOk(), JSON.stringify(created.isErr() ? created.error.message : '')).toBe(true);
  });

  it('still proves the egress path: its host listener counts only the probe too', async () => {
    const seccomp = { offline: pluginSeccompFilter(false)!, networked: pluginSeccompFilter(true)! };
    const backend = bubblewrapBackend(freshBubblewrap(), seccomp, '/usr/bin/setpriv');
    const installRoot = mkdtempSync(join(base, 'install-'));
    const writeDir = mkdtempSync(join(base, 'write-'));
    const intruder = connectToNewListeners();
    const proved = await probeEgress(backend, { installRoot, writeDir });
    const connected = intruder.stop();
    expect(connected).toBeGreaterThan(0);
    expect(proved.isOk(), JSON.stringify(proved.isErr() ? proved.error.message : '')).toBe(true);
  });
});
