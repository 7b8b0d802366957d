/**
 * The ESM runner under every node_modules layout: the packed library,
 * installed by a real `npm install` into an application, runs a sandboxed
 * esm-module plugin with its own dist/esm-runner.js, whatever npm did with
 * the library's dependencies. The sandbox exposes only what the runner
 * resolves, so a layout whose folders it missed fails the call
 * (ERR_MODULE_NOT_FOUND inside the sandbox).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { runnerReadPaths } from '../../src/shapes/esm/runnerReadPaths.js';
import { installApplication, packLibrary, type Layout } from '../support/packedLibrary.js';

const run = promisify(execFile);
const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'esm-all-capabilities');

/** Opens a host of the installed library, installs the plugin, reopens, calls echo; prints the outcome as JSON. */
const APPLICATION = `
import { PluginHost } from 'mcp-plugin-host';
const [profileDir, pluginPackage] = process.argv.slice(2);
const open = async () => {
  const opened = await PluginHost.open({ profileDir, profileKind: 'dev' });
  if (opened.isErr()) throw opened.error;
  return opened.value;
};
const installer = await open();
const installed = await installer.install(pluginPackage, { canary: false });
await installer.close();
if (installed.isErr()) throw installed.error;
const host = await open();
const called = await host.call('plug.all-capabilities.echo', { text: 'through the packed library' }, { maxRisk: 'destructive' });
const info = await host.info('all-capabilities');
await host.close();
console.log(JSON.stringify({
  result: called.isOk() ? called.value.value : undefined,
  error: called.isErr() ? { code: called.error.code, message: called.error.message, details: called.error.details } : undefined,
  sandbox: info.isOk() ? info.value.enforced_capabilities?.backend : undefined,
}));
`;

/** Whether each file can be read by a process in a sandbox exposing `readable` (besides Node itself). */
async function readInSandbox(files: readonly string[], readable: readonly string[]): Promise<boolean[]> {
  const base = await mkdtemp(join(tmpdir(), 'runner-reads-'));
  applications.push(base);
  await mkdir(join(base, 'root'));
  await mkdir(join(base, 'data'));
  const code = `const fs = require('fs'); console.log(JSON.stringify(process.argv.slice(1).map((f) => { try { fs.readFileSync(f); return true; } catch { return false; } })))`;
  const spawner = (await SandboxSpawner.create({}))._unsafeUnwrap();
  const plugin = (
    await spawner.spawn({
      executable: unverifiedCommand([process.execPath, '-e', code, ...files], join(base, 'root'), [...nodeRuntimePaths(), ...readable]),
      env: {},
      network: false,
      writeDir: join(base, 'data'),
      hiddenPaths: [],
      pluginId: 'runner-reads',
    })
  )._unsafeUnwrap();
  plugin.stdin.end();
  let out = '';
  for await (const chunk of plugin.stdout) out += String(chunk);
  await plugin.exited;
  return JSON.parse(out) as boolean[];
}

let scratch: string;
let tarball: string;
let plugin: string;
/** The backend this machine proves for the repository's own sources: the installed package, shipping its launcher, must prove the same. */
let expectedBackend: string;
const applications: string[] = [];

beforeAll(async () => {
  scratch = await realpath(await mkdtemp(join(tmpdir(), 'packed-library-')));
  tarball = await packLibrary(scratch);
  plugin = await packageFixturePlugin(FIXTURE, { bundle: ['dist/index.mjs'] });
  expectedBackend = (await SandboxSpawner.create({ backend: 'auto' }))._unsafeUnwrap().backendName;
}, 300_000);
afterAll(async () => {
  await Promise.all([scratch, plugin, ...applications].map((dir) => rm(dir, { recursive: true, force: true })));
});

describe.each<Layout>(['nested', 'hoisted', 'linked', 'pnpm', 'workspace'])('the packed library installed %s', (layout) => {
  it('runs a sandboxed esm-module plugin through its own runner', async () => {
    const { app, root } = await installApplication(tarball, layout);
    applications.push(root);
    await writeFile(join(app, 'run.mjs'), APPLICATION);
    const profile = await mkdtemp(join(tmpdir(), 'packed-profile-'));
    applications.push(profile);
    const { stdout } = await run(process.execPath, [join(app, 'run.mjs'), profile, plugin], { cwd: app });
    const outcome = JSON.parse(stdout.trim().split('\n').at(-1)!) as { result?: unknown; error?: unknown; sandbox?: string };
    expect(outcome.error).toBeUndefined();
    expect(outcome.sandbox).toBe(expectedBackend);
    expect(outcome.result).toMatchObject({ content: [{ type: 'text', text: 'through the packed library' }] });

    // What the runner's sandbox exposes is what it resolves, not the node_modules it sits in: a tool cache beside
    // the library there (transpiled application source) stays unreadable inside it.
    const cache = join(root, 'node_modules', '.cache');
    await mkdir(cache, { recursive: true });
    await writeFile(join(cache, 'app-source.js'), 'export const secret = 1;\n');
    const runner = join(root, 'node_modules', 'mcp-plugin-host', 'dist', 'esm-runner.js');
    // Node runs the runner by its real path (the sandbox mounts real paths only).
    expect(await readInSandbox([await realpath(runner), join(cache, 'app-source.js')], runnerReadPaths(runner))).toEqual([true, false]);
  }, 300_000);
});
