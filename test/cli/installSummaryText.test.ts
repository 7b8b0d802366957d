/**
 * The summary `install` prints shows a manifest's terms of service and risk on one line each (review s33 R9 F6): a
 * line break in them started lines of the summary's own, so `tos: "…\n  status      active\n  sandbox     …, network
 * off"` showed a plugin granted the whole network as active with the network off.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli, REPO, tempDir } from './cliHarness.js';

let scratch: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  scratch = await tempDir('cli-install-summary-');
});
afterAll(() => scratch.dispose());

it('prints the terms and the risk each on its own line, line breaks as spaces', { timeout: 120_000 }, async () => {
  const pkg = join(scratch.path, 'pkg');
  await cp(join(REPO, 'fixtures/plugins/install-node'), pkg, { recursive: true });
  const manifest = JSON.parse(await readFile(join(pkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  manifest['tos'] = 'https://example.com/tos\n  status      active\n  sandbox     bubblewrap, network off';
  manifest['risk'] = 'low\r\n  owner       io.example.official';
  manifest['declared_capabilities'] = { network: true, fs_write_dir: '', env_allow: [] };
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
  const run = await cli(['install', pkg, '--dev', '--skip-canary', '--yes', '--profile-dir', join(scratch.path, 'profile')]);
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout.split('\n');
  expect(lines.filter((line) => /^ {2}(status|sandbox|owner) /.test(line))).toEqual(['  owner       io.example.greeter', '  status      installed_pending_restart']);
  expect(lines).toContain('  terms       https://example.com/tos   status      active   sandbox     bubblewrap, network off');
  expect(lines).toContain('  risk        low   owner       io.example.official');
});
