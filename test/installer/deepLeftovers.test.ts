/**
 * Leftovers deeper than the system's path limit: a sandboxed server can build
 * such a tree in its writable directory with relative mkdir and chdir (an
 * introspection start writes below the install's staging directory), and an
 * install before path_too_long could leave one in an install root. Node's
 * recursive rm fails there with ENAMETOOLONG, and the collection of install
 * leftovers failed on it at every run, never reaching the others.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PATH_BYTES } from '../../src/installer/installPath.js';
import { testProfile, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile;
afterEach(async () => {
  await p.dispose();
});

/** Makes a chain of 100-byte directories below `dir`, relative step by step as a process in a sandbox would, deeper than the path limit. */
function buildDeepTree(dir: string): void {
  const levels = Math.ceil((MAX_PATH_BYTES + 500) / 101);
  // Python's chdir takes the relative name (a shell's cd builds the whole path and fails past the limit).
  const script = 'import os, sys\nos.chdir(sys.argv[1])\nfor _ in range(int(sys.argv[2])):\n    os.mkdir("d" * 100)\n    os.chdir("d" * 100)\nopen("file", "w").write("deep")\n';
  execFileSync('/usr/bin/python3', ['-c', script, dir, String(levels)]);
}

describe('install leftovers deeper than the path limit', () => {
  it('are collected, and so are the leftovers after them', async () => {
    p = await testProfile('dev');
    const deep = join(p.layout.pluginsDir, 'ghost', '1.0.0-aaaaaaaaaaaa');
    const plain = join(p.layout.pluginsDir, 'other', '1.0.0-bbbbbbbbbbbb');
    for (const root of [deep, plain]) await mkdir(root, { recursive: true });
    buildDeepTree(deep);
    await writeFile(join(plain, 'left.js'), 'x');

    const collected = unwrap(await p.installer.collectInstallLeftovers());
    expect(collected.installRoots.sort()).toEqual(['ghost/1.0.0-aaaaaaaaaaaa', 'other/1.0.0-bbbbbbbbbbbb']);
    expect((await p.census()).installRoots).toEqual([]);
  });
});
