/**
 * A registry whose name resolves to the host's loopback from the first
 * look-up (review R12, left open): the registry-only proxy npm runs behind
 * (src/installer/originProxy.ts) dials no such address for a name, so a
 * registry's owner cannot point npm's requests at the host's own services;
 * npm's failure names the answer. The name `localhost` still reaches a
 * local registry (the control). A real /etc/hosts in a private mount
 * namespace gives the answer; npm and the registry are real.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

describe('npm behind the registry-only proxy, a registry name answered with loopback', () => {
  // Root: the fixture gets a mount namespace of its own, with its own /etc/hosts; nothing of the machine's changes.
  it.runIf(process.getuid?.() === 0)('is not dialled, and the failure names the answer; localhost is', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'npm-hostonly-'));
    try {
      const fixture = join(import.meta.dirname, '..', '..', 'fixtures', 'installer', 'hostonly-registry.ts');
      const { stdout } = await promisify(execFile)('unshare', ['--mount', '--', process.execPath, '--import', 'tsx', fixture, scratch], {
        cwd: join(import.meta.dirname, '..', '..'),
        timeout: 120_000,
        killSignal: 'SIGKILL',
      });
      const outcome = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, Record<string, unknown>>;
      expect(outcome['named']).toEqual({ reason: 'npm_failed', hostOnly: ['registry.hostonly.test → 127.0.0.1 (loopback)'], requests: 0 });
      expect(outcome['localhost']?.['reason']).toBe('npm_failed');
      expect(outcome['localhost']?.['hostOnly']).toBeUndefined();
      expect(outcome['localhost']?.['requests']).toBeGreaterThan(0);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
