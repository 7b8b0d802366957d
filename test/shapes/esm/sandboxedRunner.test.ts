import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'tsup';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { SandboxSpawner } from '../../../src/sandbox/SandboxSpawner.js';
import { esmRunnerCommand } from '../../../src/shapes/esm/esmRunnerCommand.js';
import { EsmSession } from '../../../src/shapes/esm/EsmSession.js';
import { ESM_FIXTURES, firstText, REPO } from './helpers.js';

// The runner as the package ships it: bundled by tsup into one file that
// resolves its dependencies from an enclosing node_modules (as
// node_modules/mcp-plugin-host/dist/esm-runner.js does once installed).
let base: string;
let runnerDir: string;
let runnerScript: string;
const started: PluginProcess[] = [];

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'esm-sandboxed-'));
  await mkdir(join(base, 'data'));
  await mkdir(join(REPO, 'node_modules', '.cache'), { recursive: true });
  runnerDir = await mkdtemp(join(REPO, 'node_modules', '.cache', 'esm-runner-test-'));
  await writeFile(join(runnerDir, 'package.json'), '{ "type": "module" }\n');
  await build({
    entry: { 'esm-runner': join(REPO, 'src/shapes/esm/runner.ts') },
    outDir: join(runnerDir, 'dist'),
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    dts: false,
    silent: true,
    config: false,
  });
  runnerScript = join(runnerDir, 'dist', 'esm-runner.js');
}, 120_000);

afterAll(async () => {
  await Promise.all(started.map((p) => p.stop({ stdinGraceMs: 500, termGraceMs: 500 })));
  await rm(base, { recursive: true, force: true });
  await rm(runnerDir, { recursive: true, force: true });
});

it('runs an ESM plugin in the bundled runner inside the OS sandbox, like any MCP plugin', async () => {
  const spawner = (await SandboxSpawner.create())._unsafeUnwrap();
  const session = new EsmSession({
    launch: () => {
      const executable = esmRunnerCommand(ESM_FIXTURES.allCapabilities, { runnerArgv: [process.execPath, runnerScript] })._unsafeUnwrap();
      return spawner
        .spawn({ executable, env: { PATH: '/usr/bin:/bin' }, network: false, writeDir: join(base, 'data'), hiddenPaths: [] })
        .map((p) => {
          started.push(p);
          return p;
        });
    },
    startupTimeoutMs: 20_000,
  });
  try {
    const result = (await session.callTool('echo', { text: 'sandboxed' }))._unsafeUnwrap();
    expect(firstText(result.value)).toBe('sandboxed');
    expect(session.stats().launches).toBe(1);
  } finally {
    await session.close();
  }
});
