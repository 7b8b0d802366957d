/**
 * Every file of an installed package is pinned, not only the one the host
 * starts: real packages installed through PluginHost (its Installer) and
 * started through PluginHost in the sandbox, then a sibling module, a file
 * under node_modules or a Python module changed, added or removed on disk.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { PluginHost, PluginHostOptions } from '../../src/host/PluginHost.js';
import { buildEsmRunner, type BuiltRunner } from '../support/esmRunner.js';
import { FakeClock, HostPool, jsonOf, textOf } from '../support/hostHarness.js';
import { readStateRow } from '../support/pluginState.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins');
const pool = new HostPool();
const packages: string[] = [];
let runner: BuiltRunner;

beforeAll(async () => {
  runner = await buildEsmRunner();
}, 120_000);
afterEach(() => pool.cleanup());
afterAll(async () => {
  await runner.remove();
  await Promise.all(packages.map((d) => rm(d, { recursive: true, force: true })));
});

/** Writes `files` (path → text, or [text, mode]) into a fresh package directory. */
async function writePackage(files: Record<string, string | readonly [string, number]>, into?: string): Promise<string> {
  const dir = into ?? (await mkdtemp(join(tmpdir(), 'tree-pkg-')));
  if (into === undefined) packages.push(dir);
  for (const [path, content] of Object.entries(files)) {
    const [text, mode] = typeof content === 'string' ? [content, 0o644] : content;
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
    await chmod(join(dir, path), mode);
  }
  return dir;
}

/** The ndjson echo plugin split the way Node code ships: a small main, the server in a sibling module, a dependency in node_modules. */
async function nodePackage(): Promise<string> {
  const server = (await readFile(join(FIXTURES, 'ndjson-echo', 'echo.mjs'), 'utf8')).replace(/^#!.*\n/, '');
  return writePackage({
    'manifest.json': await readFile(join(FIXTURES, 'host-ndjson', 'manifest.json'), 'utf8'),
    'bin/echo.mjs': ["#!/usr/bin/env node\nimport '../lib/server.mjs';\n", 0o755],
    'lib/server.mjs': `import pong from 'pong';\n${server.replace("result: 'pong'", 'result: pong')}`,
    'node_modules/pong/package.json': '{ "name": "pong", "version": "1.0.0", "main": "index.js" }\n',
    'node_modules/pong/index.js': "module.exports = 'pong';\n",
  });
}

/** The hello-python plugin with its server in a sibling module the main script imports. */
async function pythonPackage(): Promise<string> {
  return writePackage({
    'manifest.json': await readFile(join(FIXTURES, 'hello-python', 'manifest.json'), 'utf8'),
    'bin/hello-mcp': ['#!/usr/bin/env python3\nimport hello_impl\nhello_impl.main()\n', 0o755],
    'bin/hello_impl.py': await readFile(join(FIXTURES, 'hello-python', 'bin', 'hello-mcp'), 'utf8'),
  });
}

/** The all-capabilities ESM plugin whose entry re-exports `createPlugin` from a sibling module. */
async function esmPackage(): Promise<string> {
  const dir = await packageFixturePlugin(join(FIXTURES, 'esm-all-capabilities'), { bundle: ['dist/index.mjs'] });
  packages.push(dir);
  await rename(join(dir, 'dist', 'index.mjs'), join(dir, 'dist', 'plugin.mjs'));
  return writePackage({ 'dist/index.mjs': "export { createPlugin } from './plugin.mjs';\n" }, dir);
}

interface Installed {
  readonly host: PluginHost;
  readonly clock: FakeClock;
  readonly profile: string;
  /** The install root, as the lock records it. */
  readonly root: string;
}

/** Installs `pkg` with one host and returns a second host (the plugin active), stopping idle plugins after 1 s of fake time. */
async function install(pkg: string, pluginId: string, options: PluginHostOptions = {}): Promise<Installed> {
  const clock = new FakeClock();
  const profile = await pool.profile();
  const hostOptions = { clock, idleTimeoutMs: 1_000, ...options };
  const installer = await pool.open(profile, hostOptions);
  (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
  await installer.close();
  const host = await pool.open(profile, hostOptions);
  const info = (await host.info(pluginId))._unsafeUnwrap();
  return { host, clock, profile, root: info.executable.install_root };
}

const NODE_ECHO = 'plug.host-ndjson.echo';
const NODE_PING = 'plug.host-ndjson.ping';

describe('a Node plugin: every file of the install root is pinned', () => {
  it('records the file list with the lock, and starts while the tree is unchanged, again after an idle stop', async () => {
    const { host, clock, profile, root } = await install(await nodePackage(), 'host-ndjson');
    const lock = JSON.parse(await readFile(join(profile, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { binding: { tree?: Record<string, unknown> } }> };
    expect(lock.plugins['host-ndjson']?.binding.tree).toMatchObject({ files: 5, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await readFile(join(root, '.mcp-plugin-host:files'), 'utf8')).split('\n')).toEqual(expect.arrayContaining([expect.stringMatching(/^f 644 \d+ [0-9a-f]{64} .* node_modules\/pong\/index\.js$/)]));
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrap().value).toBe('pong');
    clock.advance(1_000);
    expect((await host.call(NODE_ECHO, { a: 1 }))._unsafeUnwrap().value).toEqual({ a: 1 });
  });

  it('refuses to start when a sibling module changed, naming it, and quarantines for good', async () => {
    const { host, clock, profile, root } = await install(await nodePackage(), 'host-ndjson');
    expect((await host.call(NODE_PING, undefined)).isOk()).toBe(true);
    clock.advance(1_000);
    const server = join(root, 'lib', 'server.mjs');
    await writeFile(server, (await readFile(server, 'utf8')).replace('result: pong', "result: 'owned'"));
    const refused = (await host.call(NODE_PING, undefined))._unsafeUnwrapErr();
    expect(refused).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_changed', change: 'changed', file: 'lib/server.mjs', path: server },
    });
    expect(refused.message).toContain('lib/server.mjs');
    expect(await readStateRow(profile, 'host-ndjson')).toMatchObject({
      status: 'quarantined',
      permanent_quarantine: true,
      quarantine_reason: 'file_changed',
      last_error_code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
    });
  });

  it('refuses to start when a file was added under node_modules', async () => {
    const { host, root } = await install(await nodePackage(), 'host-ndjson');
    await writeFile(join(root, 'node_modules', 'pong', 'extra.js'), "module.exports = 'extra';\n");
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_added', change: 'added', file: 'node_modules/pong/extra.js' },
    });
  });

  it('refuses to start when a whole package was added to node_modules', async () => {
    const { host, root } = await install(await nodePackage(), 'host-ndjson');
    await writePackage({ 'node_modules/intruder/index.js': 'module.exports = 1;\n' }, root);
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_added', change: 'added', file: 'node_modules/intruder' },
    });
  });

  it('refuses to start when a file was removed', async () => {
    const { host, root } = await install(await nodePackage(), 'host-ndjson');
    await unlink(join(root, 'node_modules', 'pong', 'package.json'));
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_removed', change: 'removed', file: 'node_modules/pong/package.json' },
    });
  });

  it('catches a same-size change whose mtime was set back (the ctime moved)', async () => {
    const { host, clock, root } = await install(await nodePackage(), 'host-ndjson');
    expect((await host.call(NODE_PING, undefined)).isOk()).toBe(true);
    clock.advance(1_000);
    const dependency = join(root, 'node_modules', 'pong', 'index.js');
    const before = await stat(dependency, { bigint: true });
    const original = await readFile(dependency, 'utf8');
    const swapped = original.replace("'pong'", "'gong'");
    expect(swapped.length).toBe(original.length);
    // touch -r copies the timestamps to the nanosecond, as an attacker covering their tracks would.
    const reference = join(root, '..', 'timestamps');
    execFileSync('touch', ['-r', dependency, reference]);
    await writeFile(dependency, swapped);
    execFileSync('touch', ['-r', reference, dependency]);
    const after = await stat(dependency, { bigint: true });
    expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);
    expect(after.ctimeNs).not.toBe(before.ctimeNs);
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_changed', file: 'node_modules/pong/index.js' },
    });
  });

  it('starts once a rewritten file holds its pinned bytes again (its identity moved, so it is hashed), but not while it differs', async () => {
    const { host, clock, root } = await install(await nodePackage(), 'host-ndjson');
    const dependency = join(root, 'node_modules', 'pong', 'index.js');
    const original = await readFile(dependency);
    await writeFile(dependency, 'module.exports = 1;\n');
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrapErr().details).toMatchObject({ reason: 'file_changed', file: 'node_modules/pong/index.js' });
    await writeFile(dependency, original);
    await host.unquarantine('host-ndjson');
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrap().value).toBe('pong');
    clock.advance(1_000);
    expect((await host.call(NODE_PING, undefined))._unsafeUnwrap().value).toBe('pong');
  });
});

describe('other runtimes: what the main file imports is pinned too', () => {
  it('an ESM plugin refuses to start when the module its entry imports changed', async () => {
    const options = { esmRunnerArgv: runner.argv };
    const { host, clock, root } = await install(await esmPackage(), 'all-capabilities', options);
    const echo = 'plug.all-capabilities.echo';
    const call = { maxRisk: 'destructive' } as const;
    expect(textOf((await host.call(echo, { text: 'hi' }, call))._unsafeUnwrap())).toBe('hi');
    clock.advance(1_000);
    const plugin = join(root, 'dist', 'plugin.mjs');
    await writeFile(plugin, `${await readFile(plugin, 'utf8')}\n// changed\n`);
    expect((await host.call(echo, { text: 'hi' }, call))._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_changed', file: 'dist/plugin.mjs', path: plugin },
    });
  });

  it('a Python plugin refuses to start when the module its script imports changed', async () => {
    const { host, clock, root } = await install(await pythonPackage(), 'hello-python');
    const hello = 'plug.hello-python.hello';
    expect(jsonOf((await host.call(hello, { name: 'tree' }))._unsafeUnwrap())).toEqual({ success: true, data: { greeting: 'Hello, tree!' } });
    clock.advance(1_000);
    const impl = join(root, 'bin', 'hello_impl.py');
    await writeFile(impl, (await readFile(impl, 'utf8')).replace('Hello, ', 'Owned, '));
    expect((await host.call(hello, { name: 'tree' }))._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
      details: { reason: 'file_changed', file: 'bin/hello_impl.py', path: impl },
    });
  });

  it('a Python plugin run without a sandbox writes no bytecode next to its modules, so it starts again', async () => {
    const options = { sandbox: { dangerouslyRunUnsandboxed: true } };
    const { host, clock, root } = await install(await pythonPackage(), 'hello-python', options);
    const hello = 'plug.hello-python.hello';
    expect(jsonOf((await host.call(hello, { name: 'one' }))._unsafeUnwrap())).toEqual({ success: true, data: { greeting: 'Hello, one!' } });
    expect(existsSync(join(root, 'bin', '__pycache__'))).toBe(false);
    clock.advance(1_000);
    expect(jsonOf((await host.call(hello, { name: 'two' }))._unsafeUnwrap())).toEqual({ success: true, data: { greeting: 'Hello, two!' } });
  });
});
