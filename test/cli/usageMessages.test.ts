/**
 * Mistakes a newcomer makes on the command line, as a real subprocess (`node --import tsx src/cli/main.ts`): each
 * answer names the code, says what was expected in the words the help uses, and ends with a `try:` line naming the
 * flag that fixes it; and a command line the docs print is accepted.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;

describe('usage mistakes', () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  beforeAll(async () => {
    scratch = await tempDir('cli-usage-');
  });
  afterAll(async () => scratch?.dispose());

  it('a missing argument is named with the optional ones in brackets, as the usage line shows them', { timeout: SLOW }, async () => {
    const run = await cli(['run', 'hello']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("error HOST_INVALID_OPTIONS: 'run' needs <plugin> <tool> [<json-args|->]\n");
    expect(run.stderr).not.toContain('->?');
    const help = await cli(['run', '--help']);
    expect(help.stdout).toContain('Usage: mcp-plugin-host run <plugin> <tool> [<json-args|->] [options]');
  });

  it.each([
    [['--profile', 'work/old'], /^try: give --profile one directory name \(such as work\), or a path with --profile-dir <dir>$/m],
    [['--app-name', 'a/b'], /^try: give --app-name one directory name \(such as my-agent\), or a path with --profile-dir <dir>$/m],
  ])('a path given to %j is answered with the flag that takes a path', { timeout: SLOW }, async (flags, line) => {
    const run = await cli(['list', ...flags], { env: { XDG_DATA_HOME: scratch.path } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error HOST_INVALID_OPTIONS: option (profile|appName) must be one directory name/m);
    expect(run.stderr).toMatch(line);
  });

  it('validate --live runs without --canary, as docs/cli.md writes it', { timeout: SLOW }, async () => {
    // A lone manifest: every static check, nothing started, so the flag is all this run is about.
    const manifest = join(scratch.path, 'manifest.json');
    await writeFile(manifest, await readFile(join(REPO, 'fixtures/plugins/hello/manifest.json')));
    const run = await cli(['validate', manifest, '--live', '--json']);
    expect(run.stderr).not.toContain('--live needs --canary');
    expect(run.code).toBe(0);
    expect(json(run)).toMatchObject({ ok: true });
  });
});
