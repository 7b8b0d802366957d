/**
 * A verified executable and a dev command are two types (issue 13, item 4, step 3): `unverifiedCommand` says at
 * run time that nothing was checked and carries no digest, the type checker refuses it where a VerifiedExecutable is
 * required, and the ESM runner's command is a verified executable only when it runs a verified entry.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExecutableBinding } from '../../src/binding/bindingModule.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import type { VerifiedExecutable } from '../../src/process/VerifiedExecutable.js';
import { esmRunnerCommand } from '../../src/shapes/esm/esmRunnerCommand.js';
import { scratch, type Scratch } from '../binding/helpers/pluginTree.js';

const ENTRY_SOURCE = 'export function createPlugin() {}\n';

let s: Scratch;
beforeEach(() => {
  s = scratch();
});
afterEach(() => s.dispose());

describe('unverifiedCommand', () => {
  it('says that nothing was verified and carries no digest', () => {
    const command = unverifiedCommand(['/bin/true'], s.root);
    expect(command).toMatchObject({ argv: ['/bin/true'], inheritFds: [], installRoot: s.root, verified: false });
    expect('sha256' in command).toBe(false);
  });

  it('is not a VerifiedExecutable to the type checker', () => {
    // @ts-expect-error only the binding module produces a VerifiedExecutable
    const executable: VerifiedExecutable = unverifiedCommand(['/bin/true'], s.root);
    expect(executable.argv).toEqual(['/bin/true']);
  });
});

describe('the ESM runner command', () => {
  const runnerArgv = [process.execPath, realpathSync(process.execPath)];

  it('is unverified without a verified entry, and the binding module\'s verified executable of the entry it runs with one', async () => {
    s.write('index.mjs', ENTRY_SOURCE, 0o644);
    const command = esmRunnerCommand(s.root, { runnerArgv })._unsafeUnwrap();
    expect(command).toMatchObject({ verified: false, inheritFds: [] });
    expect('sha256' in command).toBe(false);

    const record = (await ExecutableBinding.bindModuleEntry({ installRoot: s.root, entry: 'index.mjs' }))._unsafeUnwrap();
    const entry = (await ExecutableBinding.verifyModuleEntry(record, { copyDir: s.copyDir }))._unsafeUnwrap();
    let released = 0;
    const counted = { ...entry, release: () => { released += 1; entry.release(); } };
    const executable: VerifiedExecutable = esmRunnerCommand(s.root, { runnerArgv, verifiedEntry: counted })._unsafeUnwrap();
    expect(executable.sha256).toBe(createHash('sha256').update(ENTRY_SOURCE).digest('hex'));
    expect(executable.inheritFds).toEqual([entry.fd]);
    expect('verified' in executable).toBe(false);
    // Releasing the runner's command releases the entry it inherits.
    executable.release();
    expect(released).toBe(1);
  });
});
