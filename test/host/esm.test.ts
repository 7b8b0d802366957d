/**
 * Open Discovery `esm-module` plugins through PluginHost, for real: the
 * all-capabilities fixture packaged as its author would ship it (entry
 * bundled, no dependencies), installed into a dev profile, run by the ESM
 * runner inside the OS sandbox, its entry module pinned at install and
 * re-verified before every start.
 */
import { appendFile, mkdir, mkdtemp, open, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { okAsync, ResultAsync } from 'neverthrow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { bindModuleEntry, verifyModuleEntry } from '../../src/binding/ModuleEntryBinding.js';
import type { PluginHost } from '../../src/host/PluginHost.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { esmRunnerCommand } from '../../src/shapes/esm/esmRunnerCommand.js';
import { EsmSession } from '../../src/shapes/esm/EsmSession.js';
import { issueRunnerReportSeal, type RunnerReportSeal } from '../../src/shapes/esm/runnerReportSeal.js';
import type { HostError } from '../../src/errors/HostError.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { NODE_22, nodeBinDir } from '../support/otherNode.js';
import { FakeClock, HostPool, textOf } from '../support/hostHarness.js';
import { readStateRow } from '../support/pluginState.js';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-all-capabilities');
const ID = 'all-capabilities';
const ECHO = `plug.${ID}.echo`;
const ADD = `plug.${ID}.add`;
// Tools without annotations are destructive by MCP's defaults, so the caller must accept that risk.
const CALL = { maxRisk: 'destructive' } as const;

const pool = new HostPool();
let runner: BuiltRunner;
const packages: string[] = [];

async function esmPackage(): Promise<string> {
  const dir = await packageFixturePlugin(FIXTURE, { bundle: ['dist/index.mjs'] });
  packages.push(dir);
  return dir;
}

const stateRow = (profileDir: string): Promise<Record<string, unknown>> => readStateRow(profileDir, ID);

/** Installs the packaged fixture with one host, closes it, and returns a host opened afterwards (the plugin is active). */
async function installedHost(profileDir: string, options: { clock?: FakeClock; idleTimeoutMs?: number } = {}): Promise<PluginHost> {
  const hostOptions = { esmRunnerArgv: runner.argv, ...options };
  const installer = await pool.open(profileDir, hostOptions);
  (await installer.install(await esmPackage(), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(profileDir, hostOptions);
}

beforeAll(async () => {
  runner = await buildEsmRunner();
}, 120_000);
afterEach(() => pool.cleanup());
afterAll(async () => {
  await runner.remove();
  await Promise.all(packages.map((d) => rm(d, { recursive: true, force: true })));
});

describe('esm-module plugins through PluginHost', () => {
  it('inspects a packaged ESM plugin without violations', async () => {
    const host = await pool.open(await pool.profile(), { esmRunnerArgv: runner.argv });
    const inspection = (await host.inspect(await esmPackage()))._unsafeUnwrap();
    expect(inspection.report.violations).toEqual([]);
  });

  it('installs, reopens and calls the tools in the sandboxed runner, one process across calls', async () => {
    const host = await installedHost(await pool.profile());
    const spawns: boolean[] = [];
    host.events.on('spawn', (e) => spawns.push(e.sandboxed));

    expect(textOf((await host.call(ECHO, { text: 'through the host' }, CALL))._unsafeUnwrap())).toBe('through the host');
    expect(textOf((await host.call(ADD, { a: 2, b: 3 }, CALL))._unsafeUnwrap())).toBe('5');
    const tools = (await host.tools(ID))._unsafeUnwrap();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(spawns).toEqual([true]);
    expect((await host.info(ID))._unsafeUnwrap()).toMatchObject({ shape: 'esm-module', status: 'active', executable: { path: 'dist/index.mjs' } });
  }, 90_000);

  it('refuses a tampered entry with PLUGIN_EXECUTABLE_UNTRUSTED and quarantines the plugin for good', async () => {
    const clock = new FakeClock();
    const dir = await pool.profile();
    const host = await installedHost(dir, { clock, idleTimeoutMs: 1_000 });
    expect((await host.call(ECHO, { text: 'before' }, CALL)).isOk()).toBe(true);
    clock.advance(1_000); // idle stop: the next call starts the runner again

    const info = (await host.info(ID))._unsafeUnwrap();
    await appendFile(join(info.executable.install_root, info.executable.path), '\n// tampered\n');
    const refused = (await host.call(ECHO, { text: 'after' }, CALL))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch', quarantine: true } });
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', permanent_quarantine: true, last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED' });
    clock.advance(86_400_000);
    expect((await host.call(ECHO, { text: 'later' }, CALL))._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_QUARANTINED', retryable: false });
  }, 90_000);

  it('refuses a manifest whose entry no longer names the pinned one (the package tree pin sees the new file before the runner would) and quarantines for good', async () => {
    const dir = await pool.profile();
    const host = await installedHost(dir);
    const info = (await host.info(ID))._unsafeUnwrap();
    const root = info.executable.install_root;
    await writeFile(join(root, 'dist', 'other.mjs'), 'export function createPlugin() {}\n', { mode: 0o644 });
    const manifestPath = join(root, 'mcp-plugin.json');
    await writeFile(manifestPath, JSON.stringify({ ...JSON.parse(await readFile(manifestPath, 'utf8')), entry: 'dist/other.mjs' }));

    const refused = (await host.call(ECHO, { text: 'x' }, CALL))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'file_added', file: 'dist/other.mjs' } });
    expect(await stateRow(dir)).toMatchObject({ status: 'quarantined', permanent_quarantine: true });
  }, 90_000);

  it('maps an error envelope returned as an isError result to the same host code as an mcp-plugin does', async () => {
    const dir = await pool.profile();
    const hostOptions = { esmRunnerArgv: runner.argv };
    const installer = await pool.open(dir, hostOptions);
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-error-envelope'), { bundle: ['dist/index.mjs'] });
    packages.push(pkg);
    (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(dir, hostOptions);

    const limited = (await host.call('plug.error-envelope.fail', { code: 'RATE_LIMIT' }, CALL))._unsafeUnwrapErr();
    expect(limited).toMatchObject({ code: 'RATE_LIMITED', retryable: true, retry_after_ms: 1500, source_error_code: 'RATE_LIMIT' });
    const auth = (await host.call('plug.error-envelope.fail', { code: 'AUTH_EXPIRED' }, CALL))._unsafeUnwrapErr();
    expect(auth).toMatchObject({ code: 'AUTH_REQUIRED', retryable: false });
    // An MCP-native error (the runner's stock input validation) keeps its result, as from an mcp-plugin.
    const invalid = (await host.call('plug.error-envelope.fail', { code: 5 }, CALL))._unsafeUnwrapErr();
    expect(invalid).toMatchObject({ code: 'PLUGIN_TOOL_ERROR', details: { plugin_id: 'error-envelope', op_id: 'plug.error-envelope.fail', result: { isError: true } } });
    expect(invalid.message).toMatch(/^MCP error -32602: Input validation error/);
    expect((await host.info('error-envelope'))._unsafeUnwrap()).toMatchObject({ status: 'active', last_error_code: null });
  }, 90_000);

  it.each([
    ["with the runner's load-failed status, reported as the line says, counted as the crash it is", 78, 'PLUGIN_ENTRY_INVALID'],
    ['with another status, not believed: PLUGIN_CRASHED', 3, 'PLUGIN_CRASHED'],
  ])("a plugin that writes the runner's load report and exits %s", async (_what, status, code) => {
    const dir = await pool.profile();
    const hostOptions = { esmRunnerArgv: runner.argv };
    const installer = await pool.open(dir, hostOptions);
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-forged-report'), { bundle: ['dist/index.mjs'] });
    packages.push(pkg);
    (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(dir, hostOptions);

    expect((await host.call('plug.forged-report.forge', { status }, CALL))._unsafeUnwrapErr().code).toBe(code);
    expect(await readStateRow(dir, 'forged-report')).toMatchObject({ status: 'quarantined', quarantine_reason: 'crash', retry_count: 1 });
  }, 90_000);

  it.each([
    ['without a seal', {}],
    ['with a seal of its own making', { seal: 'f'.repeat(32) }],
  ])("a plugin that writes the runner's PLUGIN_EXECUTABLE_UNTRUSTED report and exits 78 %s crashed, and is not quarantined for good with its reason", async (_what, seal) => {
    const dir = await pool.profile();
    const hostOptions = { esmRunnerArgv: runner.argv };
    const installer = await pool.open(dir, hostOptions);
    const pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-forged-report'), { bundle: ['dist/index.mjs'] });
    packages.push(pkg);
    (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(dir, hostOptions);

    const forged = { status: 78, code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch', file: '/etc/passwd' }, ...seal };
    const lines: string[] = [];
    host.events.on('stderr', (e) => lines.push(e.line));
    const failure = (await host.call('plug.forged-report.forge', forged, CALL))._unsafeUnwrapErr();
    // A report line's seal never reaches the stderr events either (a log of them would hand a runner's real seal on).
    expect(lines.filter((l) => l.includes('forged by the plugin'))).toHaveLength(1);
    expect(lines.join('\n')).not.toMatch(/"seal":"[0-9a-f]/);
    // The plugin ran and wrote its line at the call (a runner that never started would be a crash too).
    expect(failure.details).toMatchObject({ phase: 'tools/call', stderr_tail: expect.stringContaining('forged by the plugin') });
    expect(failure.code).toBe('PLUGIN_CRASHED');
    expect(failure.details).not.toHaveProperty('file');
    const row = await readStateRow(dir, 'forged-report');
    expect(row).toMatchObject({ status: 'quarantined', quarantine_reason: 'crash', last_error_code: 'PLUGIN_CRASHED', retry_count: 1 });
    expect(row.permanent_quarantine).not.toBe(true);
  }, 90_000);

  it('fails a start with HOST_INVALID_OPTIONS, without quarantine, when the runner script is not there', async () => {
    const dir = await pool.profile();
    await installedHost(dir);
    const host = await pool.open(dir, { esmRunnerArgv: [process.execPath, join(dir, 'no-such-runner.js')] });
    expect((await host.call(ECHO, { text: 'x' }, CALL))._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS' });
    expect((await host.info(ID))._unsafeUnwrap()).toMatchObject({ status: 'active', quarantined_at: null });
  }, 90_000);

  it('refuses at install an entry that escapes the package through a link, installing nothing', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'esm-outside-'));
    packages.push(outside);
    const pkg = await esmPackage();
    await writeFile(join(outside, 'index.mjs'), await readFile(join(pkg, 'dist', 'index.mjs')));
    await rm(join(pkg, 'dist', 'index.mjs'));
    await symlink(join(outside, 'index.mjs'), join(pkg, 'dist', 'index.mjs'));

    const host = await pool.open(await pool.profile(), { esmRunnerArgv: runner.argv });
    expect((await host.install(pkg, { canary: false }))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'symlink' } });
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
  });
});

describe('the runner evaluates the verified bytes', () => {
  let node22: string;
  beforeAll(async () => {
    node22 = join(await nodeBinDir(), 'node');
  }, 300_000);

  it.each([
    ['this Node (loader worker hook)', () => runner.argv],
    [`Node ${NODE_22} (in-thread hook)`, () => [node22, ...runner.argv.slice(1)]],
  ])('runs the entry as verified even when the file on disk changes between verification and start, on %s', async (_name, runnerArgv) => {
    const root = await esmPackage();
    const base = await mkdtemp(join(tmpdir(), 'esm-window-'));
    packages.push(base);
    const record = (await bindModuleEntry({ installRoot: root, entry: 'dist/index.mjs' }))._unsafeUnwrap();
    const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
    const session = EsmSession.create({
      launch: () =>
        verifyModuleEntry(record, { copyDir: join(base, 'exec') })
          // The window: whatever is on disk now must not be what runs.
          .andTee(() => writeFile(join(root, 'dist', 'index.mjs'), 'throw new Error("evaluated from disk");\n'))
          .andThen((verifiedEntry) => esmRunnerCommand(root, { verifiedEntry, runnerArgv: runnerArgv() }))
          .andThen((executable) => spawner.spawn({ executable, env: { PATH: '/usr/bin:/bin' }, network: false, writeDir: base, hiddenPaths: [] })),
      startupTimeoutMs: 30_000,
    })._unsafeUnwrap();
    try {
      expect(textOf((await session.callTool('echo', { text: 'verified' }))._unsafeUnwrap())).toBe('verified');
    } finally {
      await session.close();
    }
  }, 90_000);

  it.each([
    ['sealed with the start\'s seal: PLUGIN_EXECUTABLE_UNTRUSTED', true, 'PLUGIN_EXECUTABLE_UNTRUSTED'],
    ['without a seal (the runner\'s report is not told from a plugin\'s): PLUGIN_CRASHED', false, 'PLUGIN_CRASHED'],
  ])('refuses, in the runner, bytes that do not have the pinned SHA-256, reported %s', async (_what, sealed, code) => {
    const root = await esmPackage();
    const base = await mkdtemp(join(tmpdir(), 'esm-digest-'));
    packages.push(base);
    const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
    // The host's private folder for verified copies, which verifyModuleEntry prepares before the host issues a seal there.
    await mkdir(join(base, 'exec'), { mode: 0o700 });
    const seal = (): ResultAsync<RunnerReportSeal | undefined, HostError> => (sealed ? issueRunnerReportSeal(join(base, 'exec')) : okAsync(undefined));
    const session = EsmSession.create({
      launch: () =>
        ResultAsync.fromSafePromise(open(join(root, 'dist', 'index.mjs'), 'r')).andThen((handle) =>
          seal().andThen((reportSeal) => {
            const wrongPin = { installRoot: root, entryPath: 'dist/index.mjs', sha256: '0'.repeat(64), fd: handle.fd, release: () => void handle.close() };
            return esmRunnerCommand(root, { verifiedEntry: wrongPin, runnerArgv: runner.argv, ...(reportSeal === undefined ? {} : { reportSeal }) }).asyncAndThen((executable) =>
              spawner.spawn({ executable, env: { PATH: '/usr/bin:/bin' }, network: false, writeDir: base, hiddenPaths: [] }),
            );
          }),
        ),
      startupTimeoutMs: 30_000,
    })._unsafeUnwrap();
    try {
      const failure = (await session.listTools())._unsafeUnwrapErr();
      expect(failure.code).toBe(code);
      if (sealed) expect(failure.details).toMatchObject({ reason: 'digest_mismatch' });
      // The seal is not handed on: whoever reads the tail (a caller, a log) cannot seal a report of their own with it.
      expect(String(failure.details.stderr_tail)).not.toMatch(/"seal":"[0-9a-f]{32}"/);
    } finally {
      await session.close();
    }
  }, 90_000);
});
