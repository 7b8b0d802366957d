/**
 * What a package's wheels run at install (pip, `.pth` lines) sees the interpreter's programs and libraries, not the
 * rest of its prefix (review s33 R9 F8). A Python built with `--prefix=$HOME/.local` has the host's profile
 * (`~/.local/share/<app>/<profile>`, the file secret store of every plugin) in its prefix; the confinement mounted
 * the whole prefix, and on a host that is not root (the command runs as the host's user) a `.pth` line read another
 * plugin's stored token and could leave it in the install root, which the plugin reads at run time.
 */
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { confinedCommand } from '../../src/installer/installConfinement.js';

// Outside /tmp, which the confinement replaces with a private one: the prefix of a Python in a home directory.
let base: string;
beforeAll(async () => {
  base = await mkdtemp('/var/tmp/confinement-prefix-');
});
afterAll(() => rm(base, { recursive: true, force: true }));

function run(argv: readonly string[], seccomp: Buffer | undefined): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    (child.stdio[3] as Writable).end(seccomp);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

it.runIf(process.platform === 'linux')('mounts the prefix\'s bin and lib, not the profile and secrets beside them', { timeout: 60_000 }, async () => {
  const prefix = join(base, '.local');
  await mkdir(join(prefix, 'bin'), { recursive: true });
  await mkdir(join(prefix, 'lib'), { recursive: true });
  const python = join(prefix, 'bin', 'python3');
  // A copy of the system's Python, its stdlib found through its compiled-in prefix: its real file is in this prefix.
  await copyFile(await realpath('/usr/bin/python3'), python);
  await writeFile(join(prefix, 'lib', 'marker.txt'), 'library folder');
  const profile = join(prefix, 'share', 'mcp-plugin-host', 'default');
  await mkdir(join(profile, 'secrets'), { recursive: true, mode: 0o700 });
  await writeFile(join(profile, 'secrets', 'github.json'), '{"GITHUB_TOKEN":"ghp_of_another_plugin"}', { mode: 0o600 });
  const root = join(profile, 'plugins', 'x', '1.0.0-abc');
  await mkdir(root, { recursive: true });
  const program = [
    'import json',
    'seen = {}',
    `for name, path in [('secret', ${JSON.stringify(join(profile, 'secrets', 'github.json'))}), ('library', ${JSON.stringify(join(prefix, 'lib', 'marker.txt'))})]:`,
    '    try: seen[name] = open(path).read()',
    '    except OSError as e: seen[name] = type(e).__name__',
    'print(json.dumps(seen))',
  ].join('\n');
  // No identity: the command runs as the host's user, as on a host that is not root.
  const command = confinedCommand([python, '-I', '-c', program], { writable: root, interpreter: python, tmpBytes: 1 << 20 })._unsafeUnwrap();
  const ran = await run(command.argv, command.seccomp);
  expect(ran.code, ran.output).toBe(0);
  expect(JSON.parse(ran.output.trim().split('\n').at(-1) ?? '{}')).toEqual({ secret: 'FileNotFoundError', library: 'library folder' });
});
