/**
 * A host that is not root: bubblewrap puts each sandbox in a user namespace
 * of its own, which owns the sandbox's network namespace, and the listener
 * helper must enter that owner before the network namespace to open the
 * plugin's proxy address. Run as `nobody` from this root test process.
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
const NOBODY = '65534';
const base = mkdtempSync(join(tmpdir(), 'egress-unprivileged-'));
let origin: Server;
let originPort = 0;

beforeAll(async () => {
  // The ordinary user must reach its write directory.
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
describe('egress under a host that is not root', { timeout: 120_000 }, () => {
  it.runIf(process.getuid?.() === 0)("opens the proxy address in the sandbox's namespace and serves the plugin", async () => {
    const { stdout } = await promisify(execFile)(
      'setpriv',
      ['--reuid', NOBODY, '--regid', NOBODY, '--clear-groups', '--', process.execPath, '--import', 'tsx', FIXTURE, base, String(originPort)],
      // A host that never ends is a failure, not a process to leave behind.
      { cwd: join(import.meta.dirname, '..', '..'), env: { PATH: process.env.PATH ?? '', HOME: base }, timeout: 100_000, killSignal: 'SIGKILL' },
    ).catch((failure: { stdout?: string }) => ({ stdout: failure.stdout ?? '' }));
    expect(JSON.parse(stdout)).toEqual({ uid: Number(NOBODY), status: 'HTTP/1.1 200 OK', body: 'origin api.test/unprivileged' });
  });
});
