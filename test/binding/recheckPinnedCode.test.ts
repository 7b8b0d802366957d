/** The digest check on its own, as the host runs it after a plugin failed. */
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bindExecutable } from '../../src/binding/ExecutableBinding.js';
import { bindModuleEntry } from '../../src/binding/ModuleEntryBinding.js';
import { recheckPinnedCode } from '../../src/binding/recheckPinnedCode.js';
import { scratch, type Scratch } from './helpers/pluginTree.js';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.dispose());

describe('recheckPinnedCode', () => {
  it('passes for intact native, script and ESM-entry bindings', async () => {
    s.write('bin/tool', readFileSync('/bin/echo'));
    s.write('bin/plugin', '#!/usr/bin/env python3\nprint(1)\n');
    s.write('dist/index.mjs', 'export function createPlugin() {}\n', 0o644);
    const native = (await bindExecutable({ installRoot: s.root, executable: 'bin/tool' }))._unsafeUnwrap();
    const script = (await bindExecutable({ installRoot: s.root, executable: 'bin/plugin', searchPath: '/usr/bin' }))._unsafeUnwrap();
    const entry = (await bindModuleEntry({ installRoot: s.root, entry: 'dist/index.mjs' }))._unsafeUnwrap();
    for (const record of [native, script, entry]) expect((await recheckPinnedCode(record)).isOk()).toBe(true);
  });

  it('refuses changed, missing and inconsistent bindings for quarantine, as verification does', async () => {
    const path = s.write('bin/plugin', '#!/usr/bin/env python3\nprint(1)\n');
    const record = (await bindExecutable({ installRoot: s.root, executable: 'bin/plugin', searchPath: '/usr/bin' }))._unsafeUnwrap();
    appendFileSync(path, 'print(2)\n');
    expect((await recheckPinnedCode(record))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch', quarantine: true } });
    rmSync(path);
    expect((await recheckPinnedCode(record))._unsafeUnwrapErr().details).toMatchObject({ reason: 'missing', quarantine: true });
    expect((await recheckPinnedCode({ ...record, kind: 'esm-entry' }))._unsafeUnwrapErr().details.reason).toBe('binding_inconsistent');
  });
});
