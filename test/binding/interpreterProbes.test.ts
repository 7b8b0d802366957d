/**
 * The host asks a pinned Node interpreter for its version outside every
 * sandbox (to pick how the main module is checked, and to compare the
 * package's engines range). A file not named like Node is never run there:
 * a package's `node` link to another program of the system (review R7 N4)
 * would otherwise run that program on the host.
 */
import { copyFile, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeNodeMainLoading } from '../../src/binding/nodeMain.js';
import { nodeVersionOf } from '../../src/installer/npmEngines.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'interpreter-probes-'));
  // A copy, not a link: the host's own Node is recognised by its real path and never run.
  await copyFile(process.execPath, join(dir, 'node'));
  await copyFile(process.execPath, join(dir, 'not-an-interpreter'));
  await symlink(process.execPath, join(dir, 'linked-program'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('interpreter probes run on the host', () => {
  it('ask a file named like Node, and answer the fallback for any other file without running it', async () => {
    expect(await probeNodeMainLoading(join(dir, 'node'))).not.toBe('loader_hook');
    // Run, this Node would answer its own version and get integrity_policy or in_thread_hook.
    expect(await probeNodeMainLoading(join(dir, 'not-an-interpreter'))).toBe('loader_hook');
    expect(await probeNodeMainLoading(join(dir, 'linked-program'))).toBe('loader_hook');
  });

  it('read the version of a file named like Node only', async () => {
    expect(await nodeVersionOf(join(dir, 'node'))).toBe(process.versions.node);
    expect(await nodeVersionOf(join(dir, 'not-an-interpreter'))).toBeUndefined();
  });
});
