/**
 * Hosts that cannot enter the launcher's sandboxes, each run as a subprocess
 * of this root test process under `setpriv` (fixtures/egress/unprivileged-host.ts
 * spawns one plugin with a destination list that sends one request through
 * the proxy address):
 * - a host that is not root: bubblewrap puts each sandbox in a user namespace
 *   of its own, which owns the sandbox's network namespace, and the listener
 *   helper must enter that owner before the network namespace;
 * - a root host without CAP_SYS_PTRACE in its bounding set (a container's
 *   default, a service's CapabilityBoundingSet): its helper cannot open the
 *   namespace of the launcher's process 1, which is not dumpable, so the
 *   plugin runs under bubblewrap, or is refused, saying why, without it.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loopbackOrigin } from '../support/egressOrigin.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'egress', 'unprivileged-host.ts');
const NOBODY = '65534';
const base = mkdtempSync(join(tmpdir(), 'egress-unprivileged-'));
const origin = loopbackOrigin();

// The ordinary user must reach its write directory.
beforeAll(() => chmodSync(base, 0o777));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** The fixture host's one line of output, run under `setpriv` with `restriction` and the host's PATH `searchPath`. */
async function hostLine(restriction: readonly string[], searchPath = process.env.PATH ?? ''): Promise<unknown> {
  // setpriv is found on the test's PATH: the host's may leave out bwrap.
  const setpriv = (await promisify(execFile)('sh', ['-c', 'command -v setpriv'])).stdout.trim();
  const { stdout } = await promisify(execFile)(
    setpriv,
    [...restriction, '--', process.execPath, '--import', 'tsx', FIXTURE, base, String(origin.port())],
    // A host that never ends is a failure, not a process to leave behind.
    { cwd: join(import.meta.dirname, '..', '..'), env: { PATH: searchPath, HOME: base }, timeout: 100_000, killSignal: 'SIGKILL' },
  ).catch((failure: { stdout?: string }) => ({ stdout: failure.stdout ?? '' }));
  return JSON.parse(stdout);
}

// Real sandboxes and subprocesses: generous on a loaded machine (nothing here asserts a duration).
describe('egress under a host that is not root', { timeout: 120_000 }, () => {
  it.runIf(process.getuid?.() === 0)("opens the proxy address in the sandbox's namespace and serves the plugin", async () => {
    expect(await hostLine(['--reuid', NOBODY, '--regid', NOBODY, '--clear-groups'])).toEqual({ uid: Number(NOBODY), status: 'HTTP/1.1 200 OK', body: 'origin api.test/unprivileged' });
  });
});

describe('egress under a root host without CAP_SYS_PTRACE', { timeout: 120_000 }, () => {
  it.runIf(process.getuid?.() === 0)('runs the plugin where the listener helper can enter its namespace, and serves it', async () => {
    expect(await hostLine(['--bounding-set', '-sys_ptrace'])).toEqual({ uid: 0, status: 'HTTP/1.1 200 OK', body: 'origin api.test/unprivileged' });
  });

  it.runIf(process.getuid?.() === 0)('refuses the plugin, saying why and what would run it, when bubblewrap is not there either', async () => {
    // No bwrap on this PATH: the host has the launcher only.
    const refused = (await hostLine(['--bounding-set', '-sys_ptrace'], base)) as { code: string; message: string };
    expect(refused.code).toBe('PLUGIN_SANDBOX_UNSUPPORTED');
    expect(refused.message).toContain('CAP_SYS_PTRACE');
    expect(refused.message).toContain('bubblewrap');
  });
});
