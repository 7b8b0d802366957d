import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { SandboxSpawner } from '../../../src/sandbox/SandboxSpawner.js';
import { esmRunnerCommand } from '../../../src/shapes/esm/esmRunnerCommand.js';
import { EsmSession } from '../../../src/shapes/esm/EsmSession.js';
import { buildEsmRunner, type BuiltRunner } from '../../support/esmRunner.js';
import { ESM_FIXTURES, firstText } from './helpers.js';

// The runner as the package ships it: bundled into one file that resolves its
// dependencies from an enclosing node_modules.
let base: string;
let runner: BuiltRunner;
const started: PluginProcess[] = [];

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'esm-sandboxed-'));
  await mkdir(join(base, 'data'));
  runner = await buildEsmRunner();
}, 120_000);

afterAll(async () => {
  await Promise.all(started.map((p) => p.stop({ stdinGraceMs: 500, termGraceMs: 500 })));
  await rm(base, { recursive: true, force: true });
  await runner.remove();
});

it('runs an ESM plugin in the bundled runner inside the OS sandbox, like any MCP plugin', async () => {
  const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
  const session = EsmSession.create({
    launch: () => {
      const executable = esmRunnerCommand(ESM_FIXTURES.allCapabilities, { runnerArgv: runner.argv })._unsafeUnwrap();
      return spawner
        .spawn({ executable, env: { PATH: '/usr/bin:/bin' }, network: false, writeDir: join(base, 'data'), hiddenPaths: [] })
        .map((p) => {
          started.push(p);
          return p;
        });
    },
    startupTimeoutMs: 20_000,
  })._unsafeUnwrap();
  try {
    const result = (await session.callTool('echo', { text: 'sandboxed' }))._unsafeUnwrap();
    expect(firstText(result.value)).toBe('sandboxed');
    expect(session.stats().launches).toBe(1);
  } finally {
    await session.close();
  }
});

// The plugin's HOME is its data directory, which it writes and which outlives it: a module it plants in Node's global
// folders there must not answer a require() of its next start (the runner rebuilds them without HOME first).
const PLANTER = `import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
const text = (value) => ({ content: [{ type: 'text', text: String(value) }] });
export function createPlugin(server) {
  server.registerTool('plant', { description: 'plants a module in HOME' }, async () => {
    const dir = join(process.env.HOME, '.node_modules', 'planted-esm');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.js'), 'module.exports = "planted code ran";');
    return text(dir);
  });
  server.registerTool('look', { description: 'requires the planted module' }, async () => {
    try {
      return text(createRequire(import.meta.url)('planted-esm'));
    } catch (e) {
      return text(e.code);
    }
  });
}
`;

it('an ESM plugin\'s module planted in the Node global folders of its HOME does not answer a require() at its next start', async () => {
  const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
  const root = join(base, 'planter');
  const home = join(base, 'planter-home');
  await mkdir(root);
  await mkdir(home);
  await writeFile(join(root, 'mcp-plugin.json'), JSON.stringify({ name: 'planter', version: '1.0.0', sdk: '@modelcontextprotocol/sdk@^1.32.0', entry: 'index.mjs', capabilities: { tools: [{ name: 'plant' }, { name: 'look' }] } }));
  await writeFile(join(root, 'index.mjs'), PLANTER);
  const start = () =>
    EsmSession.create({
      launch: () =>
        spawner
          .spawn({ executable: esmRunnerCommand(root, { runnerArgv: runner.argv })._unsafeUnwrap(), env: { PATH: '/usr/bin:/bin', HOME: home }, network: false, writeDir: home, hiddenPaths: [] })
          .map((p) => {
            started.push(p);
            return p;
          }),
      startupTimeoutMs: 20_000,
    })._unsafeUnwrap();
  const first = start();
  try {
    const planted = await first.callTool('plant', {});
    if (planted.isErr()) throw planted.error;
    expect(firstText(planted.value.value)).toBe(join(home, '.node_modules', 'planted-esm'));
  } finally {
    await first.close();
  }
  const next = start();
  try {
    expect(firstText((await next.callTool('look', {}))._unsafeUnwrap().value)).toBe('MODULE_NOT_FOUND');
  } finally {
    await next.close();
  }
});
