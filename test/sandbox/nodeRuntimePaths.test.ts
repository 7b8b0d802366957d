/**
 * nodeRuntimePaths on real files and links: a Node laid out as
 * `<prefix>/bin/node` exposes its prefix, a Node placed anywhere else exposes
 * only itself, never the directory that happens to hold it.
 */
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';

let root: string;
beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'node-runtime-paths-')));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function binary(path: string): Promise<string> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, '', { mode: 0o755 });
  return path;
}

describe('nodeRuntimePaths', () => {
  it('exposes the installation prefix of a Node laid out as <prefix>/bin/node', async () => {
    const node = await binary(join(root, 'nvm', 'v20.20.0', 'bin', 'node'));
    expect(nodeRuntimePaths(node)).toEqual([join(root, 'nvm', 'v20.20.0')]);
  });

  it('exposes only the binary of a Node whose directory is not named bin', async () => {
    const node = await binary(join(root, 'opt', 'node'));
    expect(nodeRuntimePaths(node)).toEqual([node]);
  });

  it('judges the layout by the real path a link leads to', async () => {
    const laidOut = await binary(join(root, 'prefix', 'bin', 'node'));
    const loose = await binary(join(root, 'home', 'node'));
    await mkdir(join(root, 'links', 'bin'), { recursive: true });
    // A link inside a bin directory to a loose binary still exposes the binary alone, and the other way round.
    await symlink(loose, join(root, 'links', 'bin', 'node'));
    await symlink(laidOut, join(root, 'links', 'node'));
    expect(nodeRuntimePaths(join(root, 'links', 'bin', 'node'))).toEqual([loose]);
    expect(nodeRuntimePaths(join(root, 'links', 'node'))).toEqual([join(root, 'prefix')]);
  });

  it('needs nothing for a Node under /usr or /bin', () => {
    expect(nodeRuntimePaths('/usr/bin/env')).toEqual([]);
  });
});
