/**
 * The sandbox mounts the directories the host verified, by descriptor: a
 * running instance of the same plugin that swaps a verified directory for a
 * link between the check and the spawn cannot redirect the mount.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import type { ExitInfo } from '../../src/process/PluginProcess.js';
import { openPluginDirectories, type PluginDirectories } from '../../src/sandbox/pluginDirectories.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

const base = mkdtempSync(join(tmpdir(), 'bound-dirs-'));
const installRoot = join(base, 'plugins', 'p');
const dataRoot = join(base, 'data');
const outside = join(base, 'outside');
let spawner: SandboxSpawner;

beforeAll(async () => {
  for (const d of [installRoot, outside]) mkdirSync(d, { recursive: true });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const WRITE = "require('fs').writeFileSync(require('path').join(process.argv[1], 'note'), 'from the plugin')";

async function runWriter(directories: PluginDirectories): Promise<ExitInfo | undefined> {
  const cache = directories.write.path;
  const spawned = await spawner.spawn({
    executable: unverifiedCommand([process.execPath, '-e', WRITE, cache], installRoot, nodeRuntimePaths()),
    env: {},
    network: false,
    writeDir: cache,
    hiddenPaths: [],
    readOnlyPaths: [directories.data.path],
    directories,
  });
  return spawned.isOk() ? spawned.value.exited : undefined;
}

describe.each(LINUX_BACKENDS)('directories bound from descriptors (%s)', (backend) => {
  beforeAll(async () => {
    spawner = (await SandboxSpawner.create({ homeDir: join(base, 'home'), backend }))._unsafeUnwrap();
  });

  it('mounts the verified directory, not a directory put at its path after the check', async () => {
    const directories = openPluginDirectories({ dataRoot, pluginId: `swap-dir-${backend}`, writeComponents: ['cache'], fsWriteDir: 'cache' })._unsafeUnwrap();
    const cache = directories.write.path;
    // What a running instance of the plugin can do inside its data directory between the check and the mount.
    renameSync(cache, `${cache}.verified`);
    mkdirSync(cache);
    expect((await runWriter(directories))?.code).toBe(0);
    expect(readFileSync(join(`${cache}.verified`, 'note'), 'utf8')).toBe('from the plugin');
    expect(readdirSync(cache)).toEqual([]);
  });

  it('never mounts what a link put at the verified path after the check points to', async () => {
    const directories = openPluginDirectories({ dataRoot, pluginId: `swap-link-${backend}`, writeComponents: ['cache'], fsWriteDir: 'cache' })._unsafeUnwrap();
    const cache = directories.write.path;
    renameSync(cache, `${cache}.verified`);
    symlinkSync(outside, cache);
    // bubblewrap refuses a mount point that became a dangling link inside the sandbox, the Landlock launcher any link
    // at a mount point; either way nothing reaches the target.
    await runWriter(directories);
    expect(readdirSync(outside)).toEqual([]);
  });
});
