/**
 * A root host without CAP_SYS_PTRACE in its bounding set (a container's
 * default, a service's CapabilityBoundingSet): its listener helper cannot
 * open the namespace of the launcher's sandbox, whose process 1 is not
 * dumpable, so a plugin with a destination list runs under bubblewrap there
 * and still reaches its listed destination through the proxy.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'egress', 'unprivileged-host.ts');
const base = mkdtempSync(join(tmpdir(), 'egress-ptraceless-'));
let origin: Server;
let originPort = 0;

beforeAll(async () => {
  chmodSync(base, 0o777);
  origin = createServer((req, res) => res.end(`origin ${req.headers.host ?? ''}${req.url ?? ''}`));
  await new Promise<void>((resolve) => origin.listen({ host: '127.0.0.1', port: 0 }, resolve));
  originPort = (origin.address() as AddressInfo).port;
});

afterAll(() => {
  origin.close();
  rmSync(base, { recursive: true, force: true });
});

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('egress under a root host without CAP_SYS_PTRACE', { timeout: 120_000 }, () => {
  it.runIf(process.getuid?.() === 0)('runs the plugin where the listener helper can enter its namespace, and serves it', async () => {
    const { stdout } = await promisify(execFile)(
      'setpriv',
      ['--bounding-set', '-sys_ptrace', '--', process.execPath, '--import', 'tsx', FIXTURE, base, String(originPort)],
      // A host that never ends is a failure, not a process to leave behind.
      { cwd: join(import.meta.dirname, '..', '..'), env: { PATH: process.env.PATH ?? '', HOME: base }, timeout: 100_000, killSignal: 'SIGKILL' },
    ).catch((failure: { stdout?: string }) => ({ stdout: failure.stdout ?? '' }));
    expect(JSON.parse(stdout)).toEqual({ uid: 0, status: 'HTTP/1.1 200 OK', body: 'origin api.test/unprivileged' });
  });

  it.runIf(process.getuid?.() === 0)('refuses the plugin, saying why and what would run it, when bubblewrap is not there either', async () => {
    // setpriv found on the test's PATH; the host's PATH below has no bwrap: it has the launcher only.
    const setpriv = (await promisify(execFile)('sh', ['-c', 'command -v setpriv'])).stdout.trim();
    const { stdout } = await promisify(execFile)(
      setpriv,
      ['--bounding-set', '-sys_ptrace', '--', process.execPath, '--import', 'tsx', FIXTURE, base, String(originPort)],
      { cwd: join(import.meta.dirname, '..', '..'), env: { PATH: base, HOME: base }, timeout: 100_000, killSignal: 'SIGKILL' },
    ).catch((failure: { stdout?: string }) => ({ stdout: failure.stdout ?? '' }));
    const refused = JSON.parse(stdout) as { code: string; message: string };
    expect(refused.code).toBe('PLUGIN_SANDBOX_UNSUPPORTED');
    expect(refused.message).toContain('CAP_SYS_PTRACE');
    expect(refused.message).toContain('bubblewrap');
  });
});
