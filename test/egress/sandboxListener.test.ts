/**
 * The listener helper with real namespaces (root: `unshare --net` makes one):
 * it opens the proxy address inside the namespace of the process a launcher
 * reported, even before that namespace's loopback is up, and only while the
 * process is still that launcher's child, so a process id reused meanwhile
 * never gets another plugin's listener.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxProxyListener } from '../../src/egress/sandboxListener.js';

const holders: ChildProcess[] = [];
afterAll(() => holders.forEach((holder) => holder.kill('SIGKILL')));

/** A process in a network namespace of its own (loopback down), a child of this test process. */
async function inOwnNamespace(): Promise<number> {
  const holder = spawn('unshare', ['--net', '--', 'sleep', '600'], { stdio: 'ignore' });
  holders.push(holder);
  await new Promise((resolve) => holder.once('spawn', resolve));
  return holder.pid!;
}

const reportOf = (pid: number): Readable => Readable.from([JSON.stringify({ 'child-pid': pid })]);

// Real subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('sandboxProxyListener', { timeout: 60_000 }, () => {
  it.runIf(process.getuid?.() === 0)("opens the proxy address in the reported process's namespace only while it is the launcher's child", async () => {
    const pid = await inOwnNamespace();
    const stranger = await sandboxProxyListener({ pid: process.ppid, report: reportOf(pid) });
    expect(stranger._unsafeUnwrapErr()).toMatchObject({ cause: 'listen_failed', message: expect.stringContaining(`no longer the sandbox of launcher ${process.ppid}`) });

    const listener = (await sandboxProxyListener({ pid: process.pid, report: reportOf(pid) }))._unsafeUnwrap();
    expect(listener.address()).toMatchObject({ address: '127.0.0.1', port: 3128 } satisfies Partial<AddressInfo>);
    listener.close();
  });
});
