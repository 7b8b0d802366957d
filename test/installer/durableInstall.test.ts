/**
 * The durableInstall host option: a real install in a child process, traced
 * with strace, fsyncs every file and directory of the new install root and
 * the folders it was moved into before the catalog transaction renames its
 * new plugins.lock into place; without the
 * option the extracted files are not fsynced (only the tree's file list is).
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleScript } from '../support/bundleScript.js';

const run = promisify(execFile);
const SLOW = 120_000;
const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'install-node');
let child: { file: string; dir: string };
let work: string;

beforeAll(async () => {
  child = await bundleScript(join(import.meta.dirname, 'helpers', 'durableInstallChild.ts'));
  work = await mkdtemp(join(tmpdir(), 'durable-install-'));
}, SLOW);
afterAll(async () => {
  await rm(child.dir, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

/** Every file and directory below `root`, `root` included. */
async function treeOf(root: string): Promise<{ files: string[]; directories: string[] }> {
  const files: string[] = [];
  const directories = [root];
  for (let at = 0; at < directories.length; at++) {
    for (const entry of await readdir(directories[at]!, { withFileTypes: true })) {
      const path = join(directories[at]!, entry.name);
      if (entry.isDirectory()) directories.push(path);
      else files.push(path);
    }
  }
  return { files, directories };
}

/**
 * Installs the fixture in a child traced by strace: the install root, the
 * trace line of the last fsync call of each path, and the line where the
 * catalog transaction renamed its new plugins.lock into place.
 */
async function tracedInstall(mode: 'durable' | 'default'): Promise<{ root: string; fsyncs: Map<string, number>; commitLine: number }> {
  const profile = join(work, `profile-${mode}`);
  const pkg = join(work, `pkg-${mode}`);
  await cp(FIXTURE, pkg, { recursive: true });
  const trace = join(work, `trace-${mode}`);
  // -y prints the path each descriptor names, so a call is matched to its file.
  const { stdout } = await run('strace', ['-f', '-y', '-qq', '-e', 'trace=fsync,fdatasync,rename,renameat,renameat2', '-o', trace, process.execPath, child.file, profile, pkg, mode], {
    timeout: SLOW,
  });
  const root = /^root (.+)$/m.exec(stdout)?.[1];
  if (root === undefined) throw new Error(`the child did not install: ${stdout}`);
  const fsyncs = new Map<string, number>();
  let commitLine = -1;
  (await readFile(trace, 'utf8')).split('\n').forEach((line, index) => {
    // A call another thread interrupts is printed as `fsync(3</path> <unfinished ...>` and resumed on a later line.
    const synced = /f(?:data)?sync\(\d+<([^>]+)>/.exec(line)?.[1];
    if (synced !== undefined) fsyncs.set(synced, index);
    if (commitLine === -1 && /rename\w*\(.*plugins\.lock\.next/.test(line)) commitLine = index;
  });
  return { root, fsyncs, commitLine };
}

describe('durableInstall', () => {
  it('fsyncs every file and directory of the install root and its parents before the commit', { timeout: SLOW }, async () => {
    const { root, fsyncs, commitLine } = await tracedInstall('durable');
    const { files, directories } = await treeOf(root);
    expect(files.length).toBeGreaterThan(3);
    expect(commitLine).toBeGreaterThan(0);
    for (const path of [...files, ...directories, dirname(root), dirname(dirname(root))]) {
      expect(fsyncs.has(path), path).toBe(true);
      expect(fsyncs.get(path), path).toBeLessThan(commitLine);
    }
  });

  it('without it, fsyncs the tree file list but not the package files', { timeout: SLOW }, async () => {
    const { root, fsyncs } = await tracedInstall('default');
    const { files } = await treeOf(root);
    const unsynced = files.filter((path) => !fsyncs.has(path));
    expect(unsynced).toContain(join(root, 'bin', 'greeter.mjs'));
    expect(fsyncs.has(join(root, '.mcp-plugin-host:files'))).toBe(true);
  });
});
