/**
 * The scratch of a sandbox test file that starts `node -e <script>` plugins
 * on the real kernel: an install root, a write dir and a home under one
 * temporary folder (removed after the file's last test), and the plugins
 * started, stopped after each test.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../../src/sandbox/backends.js';
import { SandboxSpawner, type SandboxSpawnerOptions, type SandboxSpawnRequest } from '../../src/sandbox/SandboxSpawner.js';

/** What {@link scriptSandbox} gives a test file. */
export interface ScriptSandbox {
  /** The temporary folder everything is under. */
  readonly base: string;
  readonly installRoot: string;
  readonly writeDir: string;
  readonly home: string;
  /** A spawner with `options` over this scratch's home; throws when it cannot be made. */
  spawner(options?: SandboxSpawnerOptions): Promise<SandboxSpawner>;
  /** The request that runs `script` with node, no network, no env, as the default plugin id unless `overrides` say otherwise. */
  request(script: string, overrides?: Partial<SandboxSpawnRequest>): SandboxSpawnRequest;
  /** Spawns {@link ScriptSandbox.request}'s plugin (stopped after the test); throws when it cannot be started. */
  start(using: SandboxSpawner, script: string, overrides?: Partial<SandboxSpawnRequest>): Promise<PluginProcess>;
}

/** Makes the scratch (its folder named `prefix`...) and registers its cleanup hooks; `pluginId` is the requests' default id. */
export function scriptSandbox(prefix: string, pluginId: string): ScriptSandbox {
  const base = mkdtempSync(join(tmpdir(), prefix));
  const installRoot = join(base, 'install');
  const writeDir = join(base, 'data');
  const home = join(base, 'home');
  for (const d of [installRoot, writeDir, home]) mkdirSync(d, { recursive: true });
  const started: PluginProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  const request = (script: string, overrides: Partial<SandboxSpawnRequest> = {}): SandboxSpawnRequest => ({
    executable: unverifiedCommand([process.execPath, '-e', script], installRoot, nodeRuntimePaths()),
    env: {},
    network: false,
    writeDir,
    hiddenPaths: [],
    pluginId,
    ...overrides,
  });
  return {
    base,
    installRoot,
    writeDir,
    home,
    spawner: async (options = {}) => (await SandboxSpawner.create({ homeDir: home, ...options }))._unsafeUnwrap(),
    request,
    start: async (using, script, overrides = {}) => {
      const result = await using.spawn(request(script, overrides));
      if (result.isErr()) throw result.error;
      started.push(result.value);
      return result.value;
    },
  };
}
