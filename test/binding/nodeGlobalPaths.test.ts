/**
 * Every Node launch of a plugin rebuilds `require()`'s global folders
 * without HOME (the plugin's data directory): each bootstrap, the
 * main-module guard (under a CommonJS and an ES module main, and in a
 * worker thread) and the ESM runner's own call, each in a real Node child
 * whose HOME holds a planted module. The sandboxed end-to-end case is
 * test/sandbox/dataDirStartupCode.test.ts.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_MAIN_GUARD } from '../../src/binding/nodeMain.js';
import { nodeVerifiedMainImport, nodeVerifiedMainImportInThread } from '../../src/binding/nodeLoader.js';
import { nodeBinDir } from '../support/otherNode.js';

const GLOBAL_PATHS_SOURCE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'binding', 'nodeGlobalPaths.ts');

// What the plugin sees: the planted module, or why it found none, and the global folders under HOME.
const MAIN = `'use strict';
let planted;
try { planted = require('planted'); } catch (e) { planted = e.code; }
process.stdout.write(JSON.stringify({ planted, home_folders: require('node:module').globalPaths.filter((p) => p.startsWith(process.env.HOME)), home: process.env.HOME }));
`;

// The same look from an ES module main (the mounted-main launch of an .mjs server), through a require() of its own.
const ESM_MAIN = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
${MAIN.replace("'use strict';\n", '')}`;

// The same look from a worker thread the main starts: every thread reads the folders at its own start.
const WORKER_MAIN = `'use strict';
const { Worker } = require('node:worker_threads');
new Worker(${JSON.stringify(MAIN)}, { eval: true });
`;

let dir: string;
let home: string;
let main: string;
let esmMain: string;
let workerMain: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'global-paths-'));
  home = join(dir, 'home');
  for (const folder of ['.node_modules', '.node_libraries']) {
    await mkdir(join(home, folder, 'planted'), { recursive: true });
    await writeFile(join(home, folder, 'planted', 'index.js'), `module.exports = 'planted in ${folder}';`);
  }
  main = join(dir, 'main.cjs');
  await writeFile(main, MAIN);
  esmMain = join(dir, 'main.mjs');
  await writeFile(esmMain, ESM_MAIN);
  workerMain = join(dir, 'worker-main.cjs');
  await writeFile(workerMain, WORKER_MAIN);
});

afterAll(() => rm(dir, { recursive: true, force: true }));

/** Runs Node with `args` (the main file last), the main file open as its fd 3, as the host hands the verified copy over. */
function run(args: readonly string[], node: string = process.execPath): Promise<unknown> {
  const fd = openSync(main, 'r');
  const child = spawn(node, [...args], { env: { HOME: home, PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe', fd] });
  closeSync(fd);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`exit ${String(code)}: ${stderr.slice(-2000)}`))));
  });
}

const refused = (): unknown => ({ planted: 'MODULE_NOT_FOUND', home_folders: [], home });

describe('require() global folders under HOME', () => {
  it('load a planted module when nothing rebuilds them (the case every launch must rule out)', async () => {
    expect(await run([main])).toMatchObject({ planted: 'planted in .node_modules' });
  });

  it('are gone under the main-module guard (the policy launch and the mounted main)', async () => {
    expect(await run(['--require', NODE_MAIN_GUARD, main])).toEqual(refused());
  });

  it('are gone under the guard for an ES module main that requires through createRequire', async () => {
    expect(await run([esmMain])).toMatchObject({ planted: 'planted in .node_modules' });
    expect(await run(['--preserve-symlinks-main', '--require', NODE_MAIN_GUARD, esmMain])).toEqual(refused());
  });

  it('are gone under the guard in a worker thread the plugin starts', async () => {
    expect(await run([workerMain])).toMatchObject({ planted: 'planted in .node_modules' });
    expect(await run(['--preserve-symlinks-main', '--require', NODE_MAIN_GUARD, workerMain])).toEqual(refused());
  });

  it('are gone under the loader-worker bootstrap', async () => {
    expect(await run(['--import', nodeVerifiedMainImport(3), main])).toEqual(refused());
  });

  // registerHooks exists from Node 22.15 and 23.5, so the in-thread bootstrap is chosen only there: it runs under the
  // suite's Node 22 (a plugin's interpreter), whatever Node runs the tests.
  it('are gone under the in-thread bootstrap (Node 22)', { timeout: 300_000 }, async () => {
    expect(await run(['--import', nodeVerifiedMainImportInThread(3), main], join(await nodeBinDir(), 'node'))).toEqual(refused());
  });

  it('are gone after dropHomeGlobalPaths (the ESM runner, before it loads the plugin)', async () => {
    const script = join(dir, 'runner.mts');
    await writeFile(script, `import { dropHomeGlobalPaths } from ${JSON.stringify(GLOBAL_PATHS_SOURCE)};\ndropHomeGlobalPaths();\nawait import(${JSON.stringify(main)});\n`);
    expect(await run(['--import', 'tsx', script])).toEqual(refused());
  });
});
