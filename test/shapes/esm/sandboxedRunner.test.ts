import { mkdir, mkdtemp, rm } from 'node:fs/promises';
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
