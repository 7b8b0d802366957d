import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyExecutableBinding, type ExecutableBindingRecord } from '../../src/binding/ExecutableBinding.js';
import { bindModuleEntry, verifyModuleEntry } from '../../src/binding/ModuleEntryBinding.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.dispose());

const ENTRY = 'export function createPlugin(server) {}\n';
const sha = (bytes: string | Buffer): string => createHash('sha256').update(bytes).digest('hex');

const reasonOf = async (entry: string): Promise<unknown> => {
  const r = await bindModuleEntry({ installRoot: s.root, entry });
  const e = r._unsafeUnwrapErr();
  expect(e.code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
  return e.details.reason;
};

describe('bindModuleEntry', () => {
  it('pins the entry module: normalized path, SHA-256, kind esm-entry, an informational runner argv, real install root', async () => {
    s.write('dist/index.mjs', ENTRY, 0o644);
    const record = (await bindModuleEntry({ installRoot: s.root, entry: './dist//index.mjs' }))._unsafeUnwrap();
    expect(record).toEqual({
      executable_path: 'dist/index.mjs',
      executable_sha256: sha(ENTRY),
      argv_normalized: ['esm-runner', '--', s.root],
      install_root: s.root,
      kind: 'esm-entry',
    });
  });

  it('accepts .js as well as .mjs', async () => {
    s.write('index.js', ENTRY, 0o644);
    expect((await bindModuleEntry({ installRoot: s.root, entry: 'index.js' }))._unsafeUnwrap().executable_path).toBe('index.js');
  });

  it.each([
    ['/etc/index.mjs', 'absolute_path'],
    ['../index.mjs', 'path_traversal'],
    ['dist/../../index.mjs', 'path_traversal'],
    ['dist\\index.mjs', 'invalid_path'],
    ['', 'invalid_path'],
    ['dist/index.cjs', 'unsupported_format'],
    ['dist/index.ts', 'unsupported_format'],
    ['dist/missing.mjs', 'missing'],
  ])('refuses %j (%s)', async (entry, reason) => {
    s.write('dist/index.cjs', ENTRY, 0o644);
    s.write('dist/index.ts', ENTRY, 0o644);
    expect(await reasonOf(entry)).toBe(reason);
  });

  it('refuses a link as the entry, and a linked directory on the way to it, even pointing inside the root', async () => {
    s.write('dist/real.mjs', ENTRY, 0o644);
    symlinkSync('real.mjs', join(s.root, 'dist/index.mjs'));
    expect(await reasonOf('dist/index.mjs')).toBe('link');
    symlinkSync('dist', join(s.root, 'lib'));
    expect(await reasonOf('lib/real.mjs')).toBe('link');
  });

  it('refuses an entry that escapes the root through a link', async () => {
    const outside = join(s.base, 'outside.mjs');
    writeFileSync(outside, ENTRY);
    mkdirSync(join(s.root, 'dist'));
    symlinkSync(outside, join(s.root, 'dist/index.mjs'));
    expect(await reasonOf('dist/index.mjs')).toBe('link');
  });

  it('refuses a directory and a file others may write', async () => {
    mkdirSync(join(s.root, 'dir.mjs'));
    expect(await reasonOf('dir.mjs')).toBe('not_regular_file');
    const path = s.write('open.mjs', ENTRY, 0o644);
    chmodSync(path, 0o666);
    expect(await reasonOf('open.mjs')).toBe('unsafe_permissions');
  });
});

describe('verifyModuleEntry', () => {
  const bound = async (): Promise<ExecutableBindingRecord> => {
    s.write('dist/index.mjs', ENTRY, 0o644);
    return (await bindModuleEntry({ installRoot: s.root, entry: 'dist/index.mjs' }))._unsafeUnwrap();
  };

  it('hands over a descriptor on exactly the pinned bytes', async () => {
    const record = await bound();
    const entry = (await verifyModuleEntry(record, { copyDir: s.copyDir }))._unsafeUnwrap();
    try {
      expect(entry).toMatchObject({ installRoot: s.root, entryPath: 'dist/index.mjs', sha256: sha(ENTRY) });
      expect(readFileSync(`/proc/self/fd/${entry.fd}`, 'utf8')).toBe(ENTRY);
    } finally {
      entry.release();
    }
  });

  it('refuses a changed entry for quarantine', async () => {
    const record = await bound();
    writeFileSync(join(s.root, 'dist/index.mjs'), `${ENTRY}// tampered\n`);
    const e = (await verifyModuleEntry(record, { copyDir: s.copyDir }))._unsafeUnwrapErr();
    expect(e).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch', quarantine: true, expected_sha256: sha(ENTRY) } });
  });

  it('refuses an entry replaced by a link after install', async () => {
    const record = await bound();
    const outside = join(s.base, 'outside.mjs');
    writeFileSync(outside, ENTRY);
    const path = join(s.root, 'dist/index.mjs');
    // Renamed over the entry: the same bytes, reached through a link now.
    symlinkSync(outside, `${path}.link`);
    renameSync(`${path}.link`, path);
    expect((await verifyModuleEntry(record, { copyDir: s.copyDir }))._unsafeUnwrapErr().details).toMatchObject({ reason: 'link', quarantine: true });
  });

  it('refuses records of the other kind on both sides, so an entry binding never runs as an executable', async () => {
    const record = await bound();
    const asExecutable = (await verifyExecutableBinding(record, { copyDir: s.copyDir }))._unsafeUnwrapErr();
    expect(asExecutable.details).toMatchObject({ reason: 'binding_inconsistent', quarantine: true });
    const { kind: _kind, ...withoutKind } = record;
    const asEntry = (await verifyModuleEntry({ ...withoutKind, argv_normalized: [`${s.root}/dist/index.mjs`] }, { copyDir: s.copyDir }))._unsafeUnwrapErr();
    expect(asEntry.details).toMatchObject({ reason: 'binding_inconsistent', quarantine: true });
  });
});
