/**
 * Codes and hints that match the cause (issue 17): a directory offered to a
 * standard profile, an interpreter that is a version manager's shim, and no
 * scratch or staging path in what validate prints.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
const HELLO_PYTHON = join(REPO, 'fixtures/plugins/hello-python');

let work: { readonly path: string; dispose(): Promise<void> };
beforeAll(async () => {
  work = await tempDir('mcp-cli-codes-');
});
afterAll(() => work.dispose());

describe('a directory installed into a standard profile', () => {
  it('is PLUGIN_SOURCE_NOT_ALLOWED with a hint naming dev profiles and archives, not a checksum mismatch', { timeout: SLOW }, async () => {
    const run = await cli(['install', HELLO_PYTHON, '--profile-dir', join(work.path, 'standard'), '--json']);
    expect(run.code).toBe(3);
    const { error } = json(run) as { error: { code: string; hint: string; cli_hint: string; details: Record<string, unknown> } };
    expect(error.code).toBe('PLUGIN_SOURCE_NOT_ALLOWED');
    expect(error.details).toMatchObject({ reason: 'directory_source' });
    expect(error.hint).toContain("profileKind: 'dev'");
    expect(error.hint).toContain('.tgz or .zip');
    expect(error.cli_hint).toContain('--dev');
  });
});

describe('an interpreter found on PATH that is a shim', () => {
  it('is refused with a hint naming interpreterSearchPath, and no scratch path in the output', { timeout: SLOW }, async () => {
    const shims = join(work.path, 'shims');
    await mkdir(shims);
    // What pyenv and asdf put first on PATH: a shell script standing in for the interpreter.
    await writeFile(join(shims, 'python3'), '#!/bin/sh\nexec /usr/bin/python3 "$@"\n');
    await chmod(join(shims, 'python3'), 0o755);
    const env = { PATH: [shims, dirname(process.execPath), '/usr/bin', '/bin'].join(':') };
    const run = await cli(['validate', HELLO_PYTHON, '--json'], { env });
    expect(run.code).toBe(3);
    const [violation] = json(run).violations as Array<{ pointer: string; code: string; message: string; hint: string }>;
    expect(violation).toMatchObject({ pointer: '/executable', code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
    expect(violation?.hint).toContain('interpreterSearchPath');
    expect(violation?.hint).toContain(join(shims, 'python3'));
    expect(run.stdout).not.toMatch(/mcp-plugin-host-validate-|\/\.staging|stage-/);
    const text = await cli(['validate', HELLO_PYTHON, '--no-color'], { env });
    expect(text.stdout).toMatch(/^hint PLUGIN_EXECUTABLE_UNTRUSTED: .*interpreterSearchPath/m);
  });
});
