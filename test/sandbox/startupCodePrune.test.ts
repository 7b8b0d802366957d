/**
 * Dropping an old set of moved start-up code while a process of the plugin
 * is still inside it (review R10). A daemon child of the plugin, or an
 * instance started by a second host on the same profile, keeps its working
 * directory in a folder the host moved into the quarantine: bubblewrap's
 * bind mount lets it go on changing that folder (only `..` fails). The host
 * removed old sets by path (`rmSync`), so a swap of a folder for a link to
 * a host folder, made while the host unlinked the folder's files, had the
 * host unlink the host folder's files of the same names.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPluginDirectories } from '../../src/sandbox/pluginDirectories.js';
import { moveStartupCode, STARTUP_CODE_QUARANTINE_DIR } from '../../src/sandbox/startupCode.js';

const scratch: string[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
});

const FILES = 4000;
const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(5, '0')}`);

/** Opens the plugin's data directory as a start does and moves its start-up code into set `setName`. */
function moveIn(root: string, setName: string, keepSets: number) {
  const directories = openPluginDirectories({ dataRoot: root, pluginId: 'p', writeComponents: [], fsWriteDir: '' })._unsafeUnwrap();
  try {
    const quarantine = join(root, STARTUP_CODE_QUARANTINE_DIR, 'p');
    return moveStartupCode({ dataPath: directories.data.path, dataFd: directories.data.fd, quarantine, setName, keepSets })._unsafeUnwrap();
  } finally {
    directories.close();
  }
}

// The plugin's daemon: in bubblewrap, its data directory bound as HOME, its working directory the planted user site. When
// the host starts unlinking the files of folder X, it swaps X for a link to the host folder it wants emptied.
const DAEMON = `
const fs = require('node:fs');
let swapped = false;
fs.watch('X', () => {
  if (swapped) return;
  swapped = true;
  fs.renameSync('X', 'X.gone');
  fs.symlinkSync(process.argv[1], 'X');
  console.log('swapped');
});
console.log('ready');
setInterval(() => {}, 1000);
`;

describe('dropping old start-up code sets', () => {
  it('removes a set whatever its depth, holding a bounded number of descriptors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'startup-code-deep-'));
    scratch.push(dir);
    const root = join(dir, 'data');
    const data = join(root, 'p');
    for (const name of ['2026-01-01', '2026-01-02', '2026-01-03']) {
      // 300 folders deep (past maxRemoveDepth), made a step at a time so that no path is long.
      mkdirSync(join(data, '.bashrc'), { recursive: true });
      let here = join(data, '.bashrc');
      const cwd = process.cwd();
      try {
        for (let i = 0; i < 300; i += 1) {
          process.chdir(here);
          mkdirSync('d');
          writeFileSync('d/f', '');
          here = 'd';
        }
      } finally {
        process.chdir(cwd);
      }
      expect(moveIn(root, name, 1)?.paths).toEqual(['.bashrc']);
    }
    // Only the newest set is kept: the deep ones before it were removed.
    expect(readdirSync(join(root, STARTUP_CODE_QUARANTINE_DIR, 'p'))).toEqual(['2026-01-03']);
  });

  it('never follows a link a running instance of the plugin swapped into a set being removed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'startup-code-prune-'));
    scratch.push(dir);
    const root = join(dir, 'data');
    const data = join(root, 'p');
    const site = join(data, '.local/lib/python3.11/site-packages');
    mkdirSync(join(site, 'X'), { recursive: true });
    const victim = join(dir, 'host-folder');
    mkdirSync(victim);
    for (const name of names) {
      writeFileSync(join(site, 'X', name), 'planted');
      writeFileSync(join(victim, name), 'host file');
    }
    const home = '/home/p';
    const daemon = spawn(
      'bwrap',
      ['--ro-bind', '/', '/', '--tmpfs', '/home', '--bind', data, home, '--chdir', `${home}/.local/lib/python3.11/site-packages`, '--unshare-all', '--die-with-parent', '--', process.execPath, '-e', DAEMON, victim],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(daemon);
    let out = '';
    daemon.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    await new Promise<void>((resolve, reject) => {
      daemon.stdout?.on('data', () => {
        if (out.includes('ready')) resolve();
      });
      daemon.on('exit', (code) => reject(new Error(`daemon exited ${code}: ${out}`)));
    });

    // First start: the user site goes to the quarantine, the daemon's working directory with it.
    expect(moveIn(root, '2026-01-01', 1)?.paths).toEqual(['.local/lib/python3.11/site-packages']);
    // Second start: something planted again; the first set is dropped (one kept) while the daemon is inside it.
    writeFileSync(join(data, '.bashrc'), 'echo planted');
    expect(moveIn(root, '2026-01-02', 1)?.paths).toEqual(['.bashrc']);
    // The daemon did swap (the host did start removing the set), and the host folder lost nothing.
    if (!out.includes('swapped')) await new Promise<void>((resolve) => daemon.stdout?.on('data', () => out.includes('swapped') && resolve()));
    expect(out).toContain('swapped');
    expect(readdirSync(victim).length).toBe(FILES);
  });
});
