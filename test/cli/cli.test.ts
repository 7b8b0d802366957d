/**
 * The CLI as users meet it: a real subprocess (`node --import tsx
 * src/cli/main.ts`), real files, real temp profiles. Help, usage errors and
 * `validate`; install/run/lifecycle live in lifecycle.test.ts.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create as createTar } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import expectations from '../../fixtures/manifests/expectations.json' with { type: 'json' };
import { cli, json, MANY_VIOLATIONS_MANIFEST, MANY_VIOLATIONS_POINTERS, packageHello, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
const COMMANDS = ['init', 'validate', 'install', 'list', 'info', 'tools', 'run', 'remove', 'reload', 'canary', 'setup', 'unquarantine', 'wrap', 'serve'];
const ANSI = /\u001b\[/;

describe('help', () => {
  it('--help lists every command, the global options and the exit-code table, and exits 0', { timeout: SLOW }, async () => {
    const run = await cli(['--help']);
    expect(run.code).toBe(0);
    for (const command of COMMANDS) expect(run.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    for (const option of ['--profile', '--profile-dir', '--dev', '--dev-allow-namespace-conflict', '--json', '--no-color', '--preset']) {
      expect(run.stdout).toContain(option);
    }
    expect(run.stdout).toMatch(/^ {2}0 +ok$/m);
    expect(run.stdout).toMatch(/^ {2}2 +usage error/m);
    expect(run.stdout).toMatch(/^ {2}3 +validation failure/m);
    expect(run.stdout).toMatch(/^ {2}4 +no enforcing OS sandbox/m);
    expect(run.stdout).not.toMatch(ANSI);
  });

  it('<command> --help ends with examples of that command', { timeout: SLOW }, async () => {
    const run = await cli(['validate', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Examples\n {2}mcp-plugin-host validate \.\/plugin$/m);
  });

  it('<command> --help shows that command with its own options', { timeout: SLOW }, async () => {
    const run = await cli(['canary', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: mcp-plugin-host canary <name> [options]');
    expect(run.stdout).toContain("--canary-args='k=v ...'");
    expect(run.stdout).toContain('--live');
    expect(run.stdout).not.toContain('--set NAME');
  });
});

describe('usage errors exit 2 with a code and a hint', () => {
  it.each([
    [[], 'no command given'],
    [['lst'], "unknown command 'lst' (did you mean 'list'?)"],
    [['info'], "'info' needs <name>"],
    [['list', 'extra'], "unexpected 'extra'"],
    [['list', '--set', 'A=b'], "option --set does not apply to 'list'"],
    [['run', 'hello', 'hello', '--max-risk', 'huge'], '--max-risk must be read, write or destructive'],
    [['list', '--bogus'], "unknown option '--bogus'"],
    [['install', 'x', '--dev-allow-namespace-conflict'], 'add --dev'],
    [['run', 'hello', 'hello', '{"name":'], 'the arguments must be a JSON object'],
    [['run', 'hello', 'hello', '[1]'], 'not an array or a scalar'],
    [['validate', '/definitely/not/here'], 'no such file or directory'],
  ])('%j', { timeout: SLOW }, async (args, message) => {
    const run = await cli(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^error HOST_INVALID_OPTIONS: /);
    expect(run.stderr).toContain(message);
    expect(run.stderr).toMatch(/^hint: Run 'mcp-plugin-host (\w+ )?--help' for usage\.$/m);
  });

  it('with --json a usage error is {"ok":false,"error":{...}} on stdout and nothing on stderr', { timeout: SLOW }, async () => {
    const run = await cli(['info', '--json']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('');
    expect(json(run)).toEqual({
      ok: false,
      error: {
        code: 'HOST_INVALID_OPTIONS',
        message: "'info' needs <name>",
        hint: "Run 'mcp-plugin-host info --help' for usage.",
        retryable: false,
        details: { command: 'info' },
      },
    });
  });
});

describe('validate', () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let archive: string;
  let digest: string;
  const scratchDirs = async (): Promise<string[]> => (await readdir(tmpdir())).filter((n) => n.startsWith('mcp-plugin-host-validate-'));

  beforeAll(async () => {
    work = await tempDir('cli-validate-');
    await mkdir(join(work.path, 'bad'));
    await writeFile(join(work.path, 'bad', 'manifest.json'), JSON.stringify(MANY_VIOLATIONS_MANIFEST));
    const hello = await packageHello();
    archive = join(work.path, 'hello-0.1.0.tgz');
    await createTar({ gzip: true, file: archive, cwd: hello, portable: true }, ['manifest.json', 'bin']);
    await rm(hello, { recursive: true, force: true });
    digest = `sha256:${createHash('sha256').update(await readFile(archive)).digest('hex')}`;
  }, SLOW);
  afterAll(() => work.dispose());

  it('accepts a good package, pins its executable, and leaves no scratch profile behind', { timeout: SLOW }, async () => {
    const before = await scratchDirs();
    const run = await cli(['validate', join(REPO, 'fixtures/plugins/hello-python'), '--json']);
    expect(run.code).toBe(0);
    const out = json(run);
    expect(Object.keys(out)).toEqual(['ok', 'source', 'package', 'form', 'plugin', 'checked', 'violations', 'skipped', 'canary']);
    expect(out).toMatchObject({
      ok: true,
      package: { kind: 'directory', manifest_file: 'manifest.json', digest: null },
      form: 'gum-json',
      plugin: { plugin_id: 'hello-python', name: 'Hello (Python)', version: '0.1.0', shape: 'mcp-plugin' },
      violations: [],
      canary: { status: 'passed', mode: 'passive' },
    });
    expect(out.checked).toEqual(expect.arrayContaining(['executable binding', 'tool list']));
    // Nothing was installed anywhere: the scratch profile is gone.
    expect((await scratchDirs()).filter((d) => !before.includes(d))).toEqual([]);
  });

  it('--canary also starts the plugin and checks its tool list', { timeout: SLOW }, async () => {
    const run = await cli(['validate', join(REPO, 'fixtures/plugins/hello-python'), '--canary']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^✓ .*hello-python 0\.1\.0 \(gum-json, mcp-plugin\)$/m);
    expect(run.stdout).toMatch(/^ {2}canary +passed \(passive\)$/m);
  });

  it('prints every violation, not only the first, and exits 3', { timeout: SLOW }, async () => {
    const run = await cli(['validate', join(work.path, 'bad')]);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain(`bad: ${MANY_VIOLATIONS_POINTERS.length} violations (manifest.json, gum-json)`);
    expect(run.stdout).toMatch(/^ {2}LINE +POINTER +CODE +MESSAGE$/m);
    for (const pointer of MANY_VIOLATIONS_POINTERS) expect(run.stdout).toMatch(new RegExp(`^  \\d+:\\d+ +${pointer} +PLUGIN_`, 'm'));
    expect(run.stdout).toContain('hint PLUGIN_MANIFEST_INVALID: Fix every violation');
    expect(run.stdout).toContain('hint PLUGIN_FS_WRITE_OUTSIDE_SANDBOX: ');
  });

  it('--json lists every violation with pointer, code, message and stage', { timeout: SLOW }, async () => {
    const run = await cli(['validate', join(work.path, 'bad'), '--json']);
    expect(run.code).toBe(3);
    const out = json(run);
    expect(out.ok).toBe(false);
    const violations = out.violations as { pointer: string; code: string; message: string; stage: string }[];
    expect(violations.map((v) => v.pointer)).toEqual(MANY_VIOLATIONS_POINTERS);
    for (const v of violations) expect(Object.keys(v).sort()).toEqual(['code', 'column', 'hint', 'line', 'message', 'pointer', 'stage']);
    expect(out.error).toMatchObject({ code: 'PLUGIN_MANIFEST_INVALID', message: expect.stringContaining('(and 4 more)') });
  });

  it.each([
    'gum-json/invalid/PLUGIN_MANIFEST_INVALID-risk-class.json',
    'gum-json/invalid/PLUGIN_NAMESPACE_CONFLICT-missing-owner.json',
    'gum-toml/invalid/PLUGIN_BINDING_INVALID-malformed-tool-name.toml',
    'open-discovery/invalid/PLUGIN_ENTRY_INVALID-traversing-entry.json',
  ])('reports the corpus expectation of %s, given the lone manifest file', { timeout: SLOW }, async (file) => {
    const expected = (expectations as Record<string, { code: string; pointer: string }>)[file];
    expect(expected).toBeDefined();
    const run = await cli(['validate', join(REPO, 'fixtures/manifests', file), '--json']);
    expect(run.code).toBe(3);
    expect(json(run).violations).toContainEqual(expect.objectContaining({ code: expected?.code, pointer: expected?.pointer }));
  });

  it('checks an archive as a standard install: the checksum is required, and verified when given', { timeout: SLOW }, async () => {
    const [missing, wrong, given] = await Promise.all([
      cli(['validate', archive]),
      cli(['validate', archive, '--checksum', `sha256:${'0'.repeat(64)}`, '--json']),
      cli(['validate', archive, '--checksum', digest, '--json']),
    ]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/^error PLUGIN_CHECKSUM_MISMATCH: a checksum is required/m);
    expect(missing.stderr).toMatch(/^try: pass --checksum sha256:<hex> \(or --dev for a local test install\)$/m);
    expect(wrong.code).toBe(3);
    expect(json(wrong)).toMatchObject({ ok: false, source: archive, error: { code: 'PLUGIN_CHECKSUM_MISMATCH', details: { reason: 'mismatch', actual: digest } } });
    expect(given.code).toBe(0);
    expect(json(given)).toMatchObject({ ok: true, package: { kind: 'tgz', digest }, plugin: { plugin_id: 'hello' } });
  });

  it('installs a checksummed archive into a standard (non-dev) profile', { timeout: SLOW }, async () => {
    const profile = join(work.path, 'standard-profile');
    const installed = await cli(['install', archive, '--checksum', digest, '--profile-dir', profile, '--json']);
    expect(installed.code).toBe(0);
    expect(json(installed)).toMatchObject({ ok: true, plugin: { name: 'hello', package: { checksum: digest } } });
    const run = await cli(['run', 'hello', 'hello', '{"name":"archive"}', '--profile-dir', profile]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Hello, archive!');
  });

  it('accepts a valid lone manifest and says the executable was not pinned', { timeout: SLOW }, async () => {
    const run = await cli(['validate', join(REPO, 'fixtures/manifests/gum-json/valid/hello.json')]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('a lone manifest has no executable to pin');
  });

  it('finds what inspection alone cannot: a shell-script executable (exit 3, pointer /executable)', { timeout: SLOW }, async () => {
    const run = await cli(['validate', join(REPO, 'fixtures/plugins/install-shell'), '--json']);
    expect(run.code).toBe(3);
    const out = json(run);
    expect(out.violations).toEqual([
      expect.objectContaining({
        pointer: '/executable',
        code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
        message: expect.stringMatching(/^bin\/run is a shell script/),
        stage: 'executable_binding',
        hint: expect.stringMatching(/\S/),
      }),
    ]);
  });

  it('colours only when asked to on a non-terminal (FORCE_COLOR), and NO_COLOR or --json turn it off', { timeout: SLOW }, async () => {
    const bad = join(work.path, 'bad');
    const [forced, noColor, asJson] = await Promise.all([
      cli(['validate', bad], { env: { FORCE_COLOR: '1' } }),
      cli(['validate', bad], { env: { FORCE_COLOR: '1', NO_COLOR: '1' } }),
      cli(['validate', bad, '--json'], { env: { FORCE_COLOR: '1' } }),
    ]);
    expect(forced.stdout).toMatch(ANSI);
    expect(noColor.stdout).not.toMatch(ANSI);
    expect(asJson.stdout).not.toMatch(ANSI);
    // Colour codes never skew the columns: stripped, both layouts are identical.
    expect(forced.stdout.replace(/\u001b\[[0-9;]*m/g, '')).toBe(noColor.stdout);
  });
});
