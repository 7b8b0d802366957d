/**
 * What the host moves out of a plugin's data directory before a start, on
 * real files: the listed start-up code paths go, the rest stays, and a link
 * the plugin placed (at a listed path or on the way to one) is moved itself,
 * never followed to what it names.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPluginDirectories } from '../../src/sandbox/pluginDirectories.js';
import { moveStartupCode, STARTUP_CODE_PATHS, STARTUP_CODE_QUARANTINE_DIR } from '../../src/sandbox/startupCode.js';

const scratch: string[] = [];
afterAll(() => Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true }))));

async function dataRoot(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'startup-code-'));
  scratch.push(dir);
  return join(dir, 'data');
}

function plant(base: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(base, path)), { recursive: true });
    writeFileSync(join(base, path), text);
  }
}

/** Opens the plugin's data directory as a start does and moves its start-up code into set `setName`. */
function moveIn(root: string, setName: string, keepSets?: number) {
  const directories = openPluginDirectories({ dataRoot: root, pluginId: 'p', writeComponents: [], fsWriteDir: '' })._unsafeUnwrap();
  try {
    const quarantine = join(root, STARTUP_CODE_QUARANTINE_DIR, 'p');
    return moveStartupCode({ dataPath: directories.data.path, dataFd: directories.data.fd, quarantine, setName, ...(keepSets === undefined ? {} : { keepSets }) })._unsafeUnwrap();
  } finally {
    directories.close();
  }
}

describe('moveStartupCode', () => {
  it('moves the shell rc files, the Python user site, the Node global folders and the Bun preload config, and leaves tool configuration and data', async () => {
    const root = await dataRoot();
    const data = join(root, 'p');
    plant(data, {
      '.bashrc': 'echo planted',
      '.profile': 'echo planted',
      '.zshenv': 'echo planted',
      '.local/lib/python3.11/site-packages/planted.pth': 'import os',
      '.local/lib/python3.12/site-packages/usercustomize.py': 'import os',
      '.local/lib/python3.11/other.txt': 'kept',
      '.local/share/app/state.json': '{}',
      '.node_modules/m/index.js': 'module.exports = 1',
      '.node_libraries/m.js': 'module.exports = 1',
      '.config/.bunfig.toml': 'preload = ["./x.ts"]',
      '.config/git/config': '[user]\n\tname = p',
      '.gitconfig': '[user]\n\tname = p',
      '.npmrc': 'registry=https://registry.npmjs.org/',
      'notes.txt': 'kept',
    });
    const moved = moveIn(root, '2026-01-01-a');
    expect(moved).toBeDefined();
    expect([...(moved?.paths ?? [])].sort()).toEqual(
      ['.bashrc', '.profile', '.zshenv', '.local/lib/python3.11/site-packages', '.local/lib/python3.12/site-packages', '.node_modules', '.node_libraries', '.config/.bunfig.toml'].sort(),
    );
    expect(moved?.movedTo).toBe(join(root, STARTUP_CODE_QUARANTINE_DIR, 'p', '2026-01-01-a'));
    for (const path of moved?.paths ?? []) expect(existsSync(join(data, path))).toBe(false);
    expect(readFileSync(join(moved?.movedTo ?? '', '.local/lib/python3.11/site-packages/planted.pth'), 'utf8')).toBe('import os');
    for (const kept of ['.local/lib/python3.11/other.txt', '.local/share/app/state.json', '.config/git/config', '.gitconfig', '.npmrc', 'notes.txt']) expect(existsSync(join(data, kept))).toBe(true);
  });

  it('moves a link found at a listed path, or on the way to one, itself and leaves what it names untouched', async () => {
    const root = await dataRoot();
    const data = join(root, 'p');
    const outside = join(dirname(root), 'outside');
    plant(outside, { 'lib/python3.11/site-packages/host.pth': 'host file', 'bashrc': 'host rc' });
    mkdirSync(data, { recursive: true });
    symlinkSync(outside, join(data, '.local'));
    symlinkSync(join(outside, 'bashrc'), join(data, '.bashrc'));
    const moved = moveIn(root, 'links');
    expect([...(moved?.paths ?? [])].sort()).toEqual(['.bashrc', '.local']);
    expect(lstatSync(join(moved?.movedTo ?? '', '.local')).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(moved?.movedTo ?? '', '.bashrc')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(outside, 'lib/python3.11/site-packages/host.pth'), 'utf8')).toBe('host file');
    expect(readFileSync(join(outside, 'bashrc'), 'utf8')).toBe('host rc');
    expect(existsSync(join(data, '.local'))).toBe(false);
  });

  it('creates nothing when nothing is planted, and leaves a file where a directory is listed', async () => {
    const root = await dataRoot();
    plant(join(root, 'p'), { '.local': 'a file', '.config': 'a file', 'notes.txt': 'kept' });
    expect(moveIn(root, 'none')).toBeUndefined();
    expect(existsSync(join(root, STARTUP_CODE_QUARANTINE_DIR))).toBe(false);
    expect(readFileSync(join(root, 'p', '.local'), 'utf8')).toBe('a file');
  });

  it('keeps the newest sets only', async () => {
    const root = await dataRoot();
    for (const name of ['2026-01-01', '2026-01-02', '2026-01-03']) {
      plant(join(root, 'p'), { '.bashrc': name });
      expect(moveIn(root, name, 2)?.paths).toEqual(['.bashrc']);
    }
    const quarantine = join(root, STARTUP_CODE_QUARANTINE_DIR, 'p');
    expect(readdirSync(quarantine).sort()).toEqual(['2026-01-02', '2026-01-03']);
    expect(readFileSync(join(quarantine, '2026-01-03', '.bashrc'), 'utf8')).toBe('2026-01-03');
  });

  it('moves a folder listed for a pattern whole, unread, when it holds more entries than it lists (review R10)', async () => {
    const root = await dataRoot();
    const data = join(root, 'p');
    plant(data, { '.local/lib/python3.11/site-packages/planted.pth': 'import os', '.local/share/app/state.json': '{}' });
    // Made by a plugin to hold the host's thread at every start while it lists them for python*.
    for (let i = 0; i < 5000; i += 1) writeFileSync(join(data, '.local/lib', `f${i}`), '');
    expect(moveIn(root, 'large')?.paths).toEqual(['.local/lib']);
    expect(existsSync(join(data, '.local/lib'))).toBe(false);
    expect(existsSync(join(data, '.local/share/app/state.json'))).toBe(true);
    // A folder under the bound is listed as before.
    plant(data, { '.local/lib/python3.12/site-packages/planted.pth': 'import os', '.local/lib/other.txt': 'kept' });
    expect(moveIn(root, 'small')?.paths).toEqual(['.local/lib/python3.12/site-packages']);
    expect(existsSync(join(data, '.local/lib/other.txt'))).toBe(true);
  });

  it('finds the listed names whether the data directory is listed once or looked up name by name', async () => {
    const root = await dataRoot();
    const data = join(root, 'p');
    // Names with capitals (.Rprofile, Library, R) are looked for as listed; a directory listing is compared lowercased.
    const planted = { '.Rprofile': 'planted', '.Renviron': 'R_LIBS_USER=x', 'R/x86_64-library/4.3/p/R/p': 'planted', '.bashrc': 'echo planted', 'notes.txt': 'kept' };
    plant(data, planted);
    expect([...(moveIn(root, 'listed')?.paths ?? [])].sort()).toEqual(['.Renviron', '.Rprofile', '.bashrc', 'R/x86_64-library']);
    // A name that is not plain ASCII, then more entries than are listed: each listed name is looked up, with the same outcome.
    plant(data, { ...planted, 'caf\u00e9.txt': 'kept' });
    expect([...(moveIn(root, 'unicode')?.paths ?? [])].sort()).toEqual(['.Renviron', '.Rprofile', '.bashrc', 'R/x86_64-library']);
    for (let i = 0; i < 4100; i += 1) writeFileSync(join(data, `f${i}`), '');
    plant(data, planted);
    expect([...(moveIn(root, 'large')?.paths ?? [])].sort()).toEqual(['.Renviron', '.Rprofile', '.bashrc', 'R/x86_64-library']);
    expect(existsSync(join(data, 'notes.txt'))).toBe(true);
  });

  it('matches a pattern component in any ASCII case, as a case-insensitive data directory resolves it (review R13 F1)', async () => {
    const root = await dataRoot();
    const data = join(root, 'p');
    // On macOS or a casefold directory Python opens .local/lib/python3.12/site-packages and R its R/x86_64-pc-linux-gnu-library:
    // these names reach them there, so they go whatever the file system (on a case-sensitive one nothing reads them).
    plant(data, {
      '.local/lib/PYTHON3.12/site-packages/planted.pth': 'import os',
      '.local/lib/PyPy3.10/site-packages/planted.pth': 'import os',
      'R/x86_64-pc-linux-gnu-LIBRARY/4.3/p/R/p': 'planted',
      '.local/lib/other/site-packages/kept.pth': 'kept',
    });
    expect([...(moveIn(root, 'cased')?.paths ?? [])].sort()).toEqual([
      '.local/lib/PYTHON3.12/site-packages',
      '.local/lib/PyPy3.10/site-packages',
      'R/x86_64-pc-linux-gnu-LIBRARY',
    ]);
    expect(existsSync(join(data, '.local/lib/other/site-packages/kept.pth'))).toBe(true);
  });

  it("moves the Python user site of a macOS framework build and fish's universal variables (review R10)", async () => {
    const root = await dataRoot();
    const data = join(root, 'p');
    // site.py: a framework Python (python.org, Homebrew) has its user site at ~/Library/Python/X.Y/lib/python/site-packages;
    // fish reads exported universal variables (set -Ux PATH / NODE_OPTIONS) from ~/.config/fish/fish_variables at every start.
    plant(data, {
      'Library/Python/3.12/lib/python/site-packages/planted.pth': 'import os',
      '.config/fish/fish_variables': 'SETUVAR --export NODE_OPTIONS:--require\\x20/home/p/x.js',
      'Library/Python/3.12/bin/tool': 'kept',
    });
    expect([...(moveIn(root, 'more')?.paths ?? [])].sort()).toEqual(['.config/fish/fish_variables', 'Library/Python/3.12/lib/python/site-packages']);
    expect(existsSync(join(data, 'Library/Python/3.12/bin/tool'))).toBe(true);
  });

  it('lists only relative paths that stay inside the data directory', () => {
    for (const path of STARTUP_CODE_PATHS) {
      expect(path.startsWith('/')).toBe(false);
      expect(path.split('/')).not.toContain('..');
      expect(path.split('/')).not.toContain('');
    }
  });
});
