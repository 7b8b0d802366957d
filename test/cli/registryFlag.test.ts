/**
 * `--registry <url>` (install, wrap) fetches an `npm:<name>@<version>`
 * source from that npm registry (PluginHostOptions.npm.registry), which the
 * lock records; the same name from another registry is an owner change,
 * refused off a terminal without --yes. Run through the built CLI
 * (dist/cli.js, as `npm test` builds it before the tests) against two local
 * registries (node:http) serving packages made by npm pack.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { serveNpmVersions } from '../support/localNpmRegistry.js';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';
import { json, REPO, runProcess, tempDir, type CliRun } from './cliHarness.js';

const SLOW = 240_000;
const NAME = 'cli-registry-flag';
const BUILT = join(REPO, 'dist', 'cli.js');

const SERVER = stdioMcpServerSource({ name: 'flag', tools: [{ name: 'look', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] });

const built = (args: readonly string[]): Promise<CliRun> => runProcess(process.execPath, [BUILT, ...args]);

describe('CLI --registry', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const servers: Server[] = [];
  let genuine: string;
  let other: string;

  /** `NAME`@`version` packed by npm (no manifest: the host introspects it). */
  async function pack(version: string): Promise<string> {
    const pkg = join(dir.path, `pkg-${version}`, NAME);
    await mkdir(join(pkg, 'bin'), { recursive: true });
    await writeFile(join(pkg, 'bin', 'server.mjs'), SERVER, { mode: 0o755 });
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: NAME, version, type: 'module', license: 'MIT', bin: { [NAME]: 'bin/server.mjs' } }));
    execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', join(pkg, '..')], { cwd: pkg, stdio: 'ignore' });
    return join(pkg, '..', `${NAME}-${version}.tgz`);
  }

  beforeAll(async () => {
    dir = await tempDir('cli-registry-flag-');
    genuine = await serveNpmVersions(servers, NAME, 'bin/server.mjs', { '1.0.0': await pack('1.0.0') });
    // Only the other registry has 1.0.2: a run that fetched it asked that registry.
    other = await serveNpmVersions(servers, NAME, 'bin/server.mjs', { '1.0.2': await pack('1.0.2') });
  }, SLOW);
  afterAll(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((closed) => server.close(closed))));
    await dir.dispose();
  });

  it('is built into dist/cli.js and listed by install and wrap help', async () => {
    expect(existsSync(BUILT), 'run npm run build first (npm test builds before the tests)').toBe(true);
    for (const command of ['install', 'wrap']) {
      const help = await built(['help', command]);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/--registry <url> +the npm registry an npm:<name>@<version> source is fetched from/);
    }
  });

  it('install fetches from the registry given and records it; the same name from another registry is refused without --yes', { timeout: SLOW }, async () => {
    const profile = join(dir.path, 'profile');
    const installed = await built(['install', `npm:${NAME}@1.0.0`, '--registry', genuine, '--yes', '--skip-canary', '--profile-dir', profile, '--json']);
    expect(installed.code, installed.stderr).toBe(0);
    const lock = async (): Promise<{ version: string; package: { registry?: string } } | undefined> =>
      (JSON.parse(await readFile(join(profile, 'plugins.lock'), 'utf8')) as { plugins: Record<string, { version: string; package: { registry?: string } }> }).plugins[NAME];
    expect(await lock()).toMatchObject({ version: '1.0.0', package: { registry: genuine } });

    const moved = await built(['install', `npm:${NAME}@1.0.2`, '--registry', other, '--skip-canary', '--profile-dir', profile, '--json']);
    expect(moved.code).not.toBe(0);
    expect(json(moved)).toMatchObject({ ok: false, error: { code: 'PLUGIN_TRUST_DECLINED', details: { reason: 'registry_changed', registry_from: genuine, registry_to: other } } });
    expect(await lock()).toMatchObject({ version: '1.0.0', package: { registry: genuine } });

    const accepted = await built(['install', `npm:${NAME}@1.0.2`, '--registry', other, '--yes', '--skip-canary', '--profile-dir', profile, '--json']);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(await lock()).toMatchObject({ version: '1.0.2', package: { registry: other } });
  });

  it('wrap fetches from the registry given; a registry that is not a URL names the flag', { timeout: SLOW }, async () => {
    const wrapped = await built(['wrap', `npm:${NAME}@1.0.2`, '--registry', other, '--profile-dir', join(dir.path, 'wrap-profile')]);
    expect(wrapped.code, wrapped.stderr).toBe(0);
    expect(JSON.parse(wrapped.stdout)).toMatchObject({ plugin_id: NAME, version: '1.0.2', advertised_tools: [{ name: 'look' }] });

    const bad = await built(['wrap', `npm:${NAME}@1.0.2`, '--registry', 'registry.example', '--profile-dir', join(dir.path, 'wrap-profile')]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('error HOST_INVALID_OPTIONS: the npm registry is not a URL');
    expect(bad.stderr).toContain('--registry');
  });
});
