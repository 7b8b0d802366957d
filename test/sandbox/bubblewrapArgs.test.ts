import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bubblewrapBackend, SCOPE_LAUNCHER_INSIDE } from '../../src/sandbox/backends.js';
import { bubblewrapArgs } from '../../src/sandbox/bubblewrapArgs.js';
import { resolveLayout, type LayoutInput, type SandboxLayout } from '../../src/sandbox/SandboxLayout.js';

const base = mkdtempSync(join(tmpdir(), 'layout-'));
const profile = join(base, 'profile');
const installRoot = join(profile, 'plugins', 'p');
const writeDir = join(profile, 'data', 'p');
const home = join(base, 'home');
for (const d of [installRoot, writeDir, join(home, '.ssh'), join(installRoot, '.aws')]) mkdirSync(d, { recursive: true });
writeFileSync(join(home, '.netrc'), 'machine x password y');
writeFileSync(join(profile, 'plugins.lock'), '{}');
symlinkSync(join(home, '.ssh'), join(base, 'ssh-link'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function layout(overrides: Partial<LayoutInput> = {}): SandboxLayout {
  return resolveLayout({
    network: false,
    installRoot,
    writeDir,
    readOnlyPaths: [],
    hiddenPaths: [profile],
    secretPaths: [join(home, '.ssh'), join(home, '.netrc'), join(installRoot, '.aws'), join(home, '.missing')],
    systemPaths: ['/usr', '/bin', '/etc', '/nonexistent-system-dir'],
    ...overrides,
  })._unsafeUnwrap();
}

const pairs = (args: string[], flag: string): string[] => args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));

describe('resolveLayout', () => {
  it('masks only what falls inside a mounted tree', () => {
    const plain = layout();
    // Neither home nor the profile directory is mounted: nothing to mask there.
    expect(plain.masksOutside).toEqual([]);
    // A secret inside the install root is masked after the install root is mounted.
    expect(plain.masksInside).toEqual([{ path: join(installRoot, '.aws'), kind: 'dir' }]);
    const withHome = layout({ readOnlyPaths: [home, base] });
    expect(withHome.masksOutside).toEqual([
      { path: profile, kind: 'dir' },
      { path: join(home, '.netrc'), kind: 'file' },
      { path: join(home, '.ssh'), kind: 'dir' },
    ]);
  });

  it('resolves links to the real paths that get mounted or masked', () => {
    expect(layout({ readOnlyPaths: [base], secretPaths: [join(base, 'ssh-link')] }).masksOutside).toContainEqual({ path: join(home, '.ssh'), kind: 'dir' });
  });

  it('recreates merged-/usr links as links and skips absent system directories', () => {
    const system = layout({ systemPaths: ['/usr', '/bin', '/nonexistent-system-dir'] }).system;
    expect(system[0]).toEqual({ kind: 'dir', path: '/usr' });
    expect(system.map((s) => s.path)).not.toContain('/nonexistent-system-dir');
  });

  it('refuses relative paths, a missing writeDir, and a writeDir that is itself hidden', () => {
    const input: LayoutInput = { network: false, installRoot, writeDir, readOnlyPaths: [], hiddenPaths: [], secretPaths: [] };
    expect(resolveLayout({ ...input, writeDir: 'data' })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(resolveLayout({ ...input, writeDir: join(base, 'nope') })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(resolveLayout({ ...input, readOnlyPaths: ['relative'] })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(resolveLayout({ ...input, hiddenPaths: [writeDir] })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });
});

describe('bubblewrapArgs', () => {
  it('isolates every namespace, dies with the host, drops capabilities, and shares the network only on request', () => {
    const off = bubblewrapArgs(layout(), 5);
    for (const flag of ['--unshare-all', '--die-with-parent', '--new-session']) expect(off).toContain(flag);
    expect(pairs(off, '--cap-drop')).toEqual(['ALL']);
    expect(off).not.toContain('--share-net');
    expect(pairs(off, '--seccomp')).toEqual(['5']);
    const on = bubblewrapArgs(layout({ network: true }), undefined);
    expect(on).toContain('--share-net');
    expect(on).not.toContain('--seccomp');
  });

  it('mounts an allowlist: system dirs read-only, the install root read-only, only writeDir writable', () => {
    const args = bubblewrapArgs(layout(), 5);
    expect(pairs(args, '--ro-bind')).toEqual(['/usr', '/etc', installRoot]);
    expect(pairs(args, '--bind')).toEqual([writeDir]);
    expect(pairs(args, '--symlink')).toEqual(['usr/bin']);
    expect(args.join(' ')).not.toMatch(/--(ro-)?bind \/ |\/home|\/run|\/var/);
    expect(pairs(args, '--tmpfs')).toContain('/tmp');
    expect(pairs(args, '--proc')).toEqual(['/proc']);
    expect(pairs(args, '--dev')).toEqual(['/dev']);
    expect(args.at(-1)).toBe('--');
    expect(pairs(args, '--chdir')).toEqual([installRoot]);
  });

  it('masks secrets after the trees holding them, re-mounts own dirs after masks, and makes masks and / read-only', () => {
    const args = bubblewrapArgs(layout({ readOnlyPaths: [home, base] }), 5);
    const at = (flag: string, value: string) => args.findIndex((a, i) => a === flag && args[i + 1] === value);
    expect(at('--ro-bind', base)).toBeLessThan(at('--tmpfs', profile));
    expect(at('--tmpfs', profile)).toBeLessThan(at('--ro-bind', installRoot));
    expect(at('--tmpfs', profile)).toBeLessThan(at('--bind', writeDir));
    expect(args.join(' ')).toContain(`--ro-bind /dev/null ${join(home, '.netrc')}`);
    expect(at('--ro-bind', installRoot)).toBeLessThan(at('--tmpfs', join(installRoot, '.aws')));
    expect(pairs(args, '--remount-ro')).toEqual(['/proc', profile, join(home, '.ssh'), join(installRoot, '.aws'), '/dev', '/tmp', '/']);
  });

  it("a sized /tmp is the sandbox's own: a sticky tmpfs of that size, left writable", () => {
    const args = bubblewrapArgs({ ...layout(), tmpBytes: 4 * 2 ** 20 }, 5);
    const at = args.findIndex((a, i) => a === '--tmpfs' && args[i + 1] === '/tmp');
    expect(args.slice(at - 4, at + 2)).toEqual(['--perms', '1777', '--size', String(4 * 2 ** 20), '--tmpfs', '/tmp']);
    expect(pairs(args, '--remount-ro')).toEqual(['/proc', join(installRoot, '.aws'), '/dev', '/']);
  });
});

describe('bubblewrapArgs for a bound, switched-user layout', () => {
  const bound = layout({
    boundDirectories: [
      { path: join(writeDir, 'cache'), fd: 7, writable: true },
      { path: writeDir, fd: 8, writable: false },
    ],
    writeDir: join(writeDir, 'cache'),
    identity: { uid: 1_900_000_001, gid: 1_900_000_001 },
  });

  it('binds the plugin directories from descriptors, never by path, the data directory before its writable subtree', () => {
    const args = bubblewrapArgs(bound, 9);
    expect(pairs(args, '--bind')).toEqual([]);
    expect(args.join(' ')).toContain(`--ro-bind-fd 8 ${writeDir} --bind-fd 7 ${join(writeDir, 'cache')}`);
  });

  it('keeps only the capabilities setpriv needs, without a user namespace, and makes mount-point parents traversable', () => {
    const args = bubblewrapArgs(bound, 9);
    expect(args).not.toContain('--unshare-all');
    for (const flag of ['--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-net', '--die-with-parent', '--new-session']) expect(args).toContain(flag);
    expect(pairs(args, '--cap-drop')).toEqual(['ALL']);
    expect(pairs(args, '--cap-add')).toEqual(['CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP']);
    expect(pairs(args, '--dir')).toContain(join(profile, 'data'));
    expect(pairs(args, '--perms').every((p) => p === '0755')).toBe(true);
  });
});

describe('bubblewrap with the scope launcher', () => {
  const seccomp = { offline: Buffer.from('offline'), networked: Buffer.from('networked') };
  const switched = layout({ identity: { uid: 1_900_000_001, gid: 1_900_000_001 }, network: true });

  // The launcher is copied from the host's descriptor to a path of the sandbox's own root, before / is made read-only,
  // and runs behind setpriv, right before the plugin: as the plugin's user, with no capability left.
  it('copies the launcher from its descriptor and runs the plugin through its scope-only mode, behind setpriv', () => {
    const backend = bubblewrapBackend('/usr/bin/bwrap', seccomp, '/usr/bin/setpriv', '/opt/host/dist/mcp-plugin-launcher');
    expect(backend.scoped).toBe(true);
    const { args } = backend.launch(switched, ['/usr/bin/node', 'main.js'], 6, undefined, undefined, 5);
    expect(args.join(' ')).toContain(`--perms 0555 --ro-bind-data 5 ${SCOPE_LAUNCHER_INSIDE}`);
    expect(args.indexOf('--ro-bind-data')).toBeLessThan(args.lastIndexOf('--remount-ro'));
    // Nowhere the launcher's host path, which names where the host is installed.
    expect(args.filter((a) => a.includes('/opt/host'))).toEqual([]);
    const plugin = args.slice(args.indexOf('--') + 1);
    expect(plugin[0]).toBe('/usr/bin/setpriv');
    // The plugin keeps the descriptors below the seccomp program's (6): the host's, from 3 on.
    expect(plugin.slice(plugin.indexOf('--') + 1)).toEqual([SCOPE_LAUNCHER_INSIDE, '--scope', '--pass-fds', '3', '--', '/usr/bin/node', 'main.js']);
  });

  it('refuses a launch without the launcher\'s descriptor rather than run the plugin unscoped', () => {
    const backend = bubblewrapBackend('/usr/bin/bwrap', seccomp, '/usr/bin/setpriv', '/opt/host/dist/mcp-plugin-launcher');
    expect(() => backend.launch(switched, ['/usr/bin/node'], 6)).toThrow(/scope launcher/);
  });

  it('without a launcher (or a kernel without the scopes) runs the plugin as before and says it is not scoped', () => {
    const backend = bubblewrapBackend('/usr/bin/bwrap', seccomp, '/usr/bin/setpriv');
    expect(backend.scoped).toBe(false);
    const { args } = backend.launch(switched, ['/usr/bin/node', 'main.js'], 6);
    expect(args).not.toContain('--ro-bind-data');
    expect(args.slice(-2)).toEqual(['/usr/bin/node', 'main.js']);
    expect(args).not.toContain('--scope');
  });
});
