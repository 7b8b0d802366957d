/**
 * `info <plugin>` names the npm bin the install chose with `--bin` (the lock's
 * `package.bin`): which of the package's programs runs as its server, and
 * which an upgrade runs again. A package installed without `--bin` shows no
 * such row. Real CLI, a locally packed package with a CLI bin beside its
 * server's (as bunqueue ships bunqueue-mcp).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';
import { cli, json, tempDir } from './cliHarness.js';

const SLOW = 180_000;

// A command-line tool that is not an MCP server.
const CLI_BIN = "#!/usr/bin/env node\nprocess.stdout.write('usage: jobs <command>\\n');\nprocess.exit(1);\n";

// The MCP server: one tool.
const MCP_BIN = stdioMcpServerSource({ name: 'jobs', tools: [{ name: 'enqueue', description: 'Queues a job', inputSchema: { type: 'object' } }] });

async function pack(dir: string, name: string, bins: Readonly<Record<string, string>>): Promise<string> {
  const pkg = join(dir, name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  for (const [bin, source] of Object.entries(bins)) await writeFile(join(pkg, 'bin', `${bin}.mjs`), source, { mode: 0o755 });
  const bin = Object.fromEntries(Object.keys(bins).map((b) => [b, `bin/${b}.mjs`]));
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', license: 'MIT', bin }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-1.0.0.tgz`);
}

describe('CLI info: the npm bin chosen with install --bin', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  beforeAll(async () => {
    dir = await tempDir('cli-info-bin-');
  });
  afterAll(() => dir.dispose());

  it('shows the bin (human and --json) for a plugin installed with --bin, and none for one without', { timeout: SLOW }, async () => {
    const profile = join(dir.path, 'profile');
    const twoBins = await pack(dir.path, 'jobkit', { 'jobkit-cli': CLI_BIN, 'jobkit-mcp': MCP_BIN });
    const oneBin = await pack(dir.path, 'solojob', { solojob: MCP_BIN });
    for (const args of [[`npm:${twoBins}`, '--bin', 'jobkit-mcp'], [`npm:${oneBin}`]]) {
      const installed = await cli(['install', ...args, '--yes', '--skip-canary', '--profile-dir', profile]);
      expect(installed.code, installed.stderr).toBe(0);
    }

    const human = await cli(['info', 'jobkit', '--profile-dir', profile]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^\s*npm bin\s+jobkit-mcp \(install --bin; an upgrade runs it again\)$/m);
    const asJson = await cli(['info', 'jobkit', '--json', '--profile-dir', profile]);
    expect(json(asJson)).toMatchObject({ ok: true, plugin: { package: { bin: 'jobkit-mcp' } } });

    const plain = await cli(['info', 'solojob', '--profile-dir', profile]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain('solojob');
    expect(plain.stdout).not.toContain('npm bin');
    const plainJson = json(await cli(['info', 'solojob', '--json', '--profile-dir', profile])) as { plugin: { package: Record<string, unknown> } };
    expect(plainJson.plugin.package['bin']).toBeUndefined();
  });
});
