/**
 * What the eighth round of docs/published-servers.md ("Servers tried") found
 * wrong in the host, each with a server packed locally (`npm pack`) that
 * fails as the published one does:
 *
 * - obsidian-mcp@2.0.1 takes its vault as its argument and refuses a path
 *   with a hidden component ("Invalid vault path (Contains hidden
 *   directories)"). Its introspection start ran with the data directory
 *   `<profile>/staging/.stage-XXXX/introspection/data/npm-introspection`,
 *   hidden by the host's own staging name, so `--arg '${data_dir}/vault'`
 *   failed to install though the plugin's data directory
 *   (`<profile>/data/<id>`) is not hidden. Next it refuses a vault that
 *   does not exist, and `--grant-write-dir vault`, which every start of the
 *   plugin makes in its data directory, was not made for the introspection
 *   start.
 * - anilist-mcp@1.4.0 depends on `@yuna0x0/anilist-node`, which the
 *   registry answered 404: npm's output ends in a blank `npm error 404` and
 *   two lines of advice, and the message, made of npm's last three lines,
 *   named neither the package nor the 404 ("npm error 404 Note that you can
 *   also install from a npm error 404 tarball, folder, http url, or git url.").
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { bundledNpmCli, npmReasonLines } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// obsidian-mcp@2.0.1's checks of its vault argument (no hidden component, an existing directory), then a one-tool server that lists the vault.
const VAULT_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
import { existsSync, readdirSync } from 'node:fs';
const vault = process.argv[2];
if (vault === undefined || vault.split('/').some((part) => part.startsWith('.') && part !== '.obsidian')) {
  console.error('Error: Invalid vault path (Contains hidden directories): ' + vault);
  process.exit(1);
}
if (!existsSync(vault)) {
  console.error('Error: Vault directory does not exist: ' + vault);
  process.exit(1);
}
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'vault', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'list-notes', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'notes: ' + readdirSync(vault).length } ] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('published servers, eighth round: fixtures', { timeout: 180_000 }, () => {
  it('introspects a server that refuses a data directory with a hidden component or a vault that does not exist yet (obsidian-mcp, --grant-write-dir vault), and runs it', async () => {
    const profileDir = await pool.profile();
    const tarball = await packServer(await pool.profile(), { name: 'vault-like', source: VAULT_SERVER });
    const installer = await pool.open(profileDir, { profileKind: 'standard' });
    const installed = await installer.install(`npm:${tarball}`, { canary: false, args: ['${data_dir}/vault'], grant: { fs_write_dir: 'vault' } });
    expect(installed._unsafeUnwrap().plugin.display_name).toBe('vault-like');
    await installer.close();
    const host = await pool.open(profileDir, { profileKind: 'standard' });
    const called = await host.call('plug.npm-vault-like.list-notes', {}, { maxRisk: 'destructive' });
    if (called.isErr()) throw new Error(called.error.message);
    const answer = called.value;
    expect(JSON.stringify(answer)).toContain('notes: 0');
  });

  it('still collects a dead staging directory named as earlier versions named them (.stage-*)', async () => {
    const profileDir = await pool.profile();
    const tarball = await packServer(await pool.profile(), { name: 'vault-like', source: VAULT_SERVER });
    const staging = join(profileDir, 'staging');
    // An install of an earlier version, killed an hour ago: its process (this one's child, exited) is gone.
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    await mkdir(join(staging, '.stage-killed'), { recursive: true });
    await writeFile(join(staging, '.stage-killed', 'owner.json'), JSON.stringify({ pid: dead, hostname: hostname(), started_at_ms: Date.now() - 3_600_000 }));
    const host = await pool.open(profileDir, { profileKind: 'standard' });
    expect((await host.install(`npm:${tarball}`, { canary: false, args: ['${data_dir}/vault'], grant: { fs_write_dir: 'vault' } })).isOk()).toBe(true);
    expect(await readdir(staging)).toEqual([]);
  });

  it('names the package the registry lacks (a 404 of a dependency, anilist-mcp)', async () => {
    const work = await pool.profile();
    const pkg = join(work, 'shim');
    await mkdir(join(pkg, 'bin'), { recursive: true });
    await writeFile(join(pkg, 'bin', 'server.mjs'), '#!/usr/bin/env node\n', { mode: 0o755 });
    // A scope no one registered: the registry answers 404 for it.
    const missing = '@mcp-plugin-host-no-such-scope/no-such-package';
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'shim', version: '1.0.0', type: 'module', bin: 'bin/server.mjs', dependencies: { [missing]: '^1.15.1' } }));
    execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', work], { cwd: pkg, stdio: 'ignore' });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${join(work, 'shim-1.0.0.tgz')}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'npm_failed' } });
    expect(error.message).toContain('E404');
    expect(error.message).toContain(`'${missing}@^1.15.1' could not be found`);
    expect(error.message).not.toContain('Note that you can also install');
  });
});

describe("npm's reason lines", () => {
  it('takes the code and the next two lines that say something (E404)', () => {
    const printed = [
      'npm error code E404',
      'npm error 404 Not Found - GET https://registry.npmjs.org/@yuna0x0%2fanilist-node - Not found',
      'npm error 404',
      "npm error 404  The requested resource '@yuna0x0/anilist-node@^1.15.1' could not be found or you do not have permission to access it.",
      'npm error 404',
      'npm error 404 Note that you can also install from a',
      'npm error 404 tarball, folder, http url, or git url.',
    ].join('\n');
    expect(npmReasonLines(printed)).toEqual([
      'npm error code E404',
      'npm error 404 Not Found - GET https://registry.npmjs.org/@yuna0x0%2fanilist-node - Not found',
      "npm error 404  The requested resource '@yuna0x0/anilist-node@^1.15.1' could not be found or you do not have permission to access it.",
    ]);
  });

  it('after warnings, with the older ERR! prefix (ETARGET)', () => {
    const printed = ['npm WARN deprecated x@1.0.0', 'npm ERR! code ETARGET', 'npm ERR! notarget No matching version found for left-pad@999.0.0.', 'npm ERR! notarget In most cases you or one of your dependencies are requesting', 'npm ERR! notarget a package version that doesn\'t exist.'].join('\n');
    expect(npmReasonLines(printed)).toEqual(['npm ERR! code ETARGET', 'npm ERR! notarget No matching version found for left-pad@999.0.0.', 'npm ERR! notarget In most cases you or one of your dependencies are requesting']);
  });

  it('takes the last three lines when npm printed no code', () => {
    expect(npmReasonLines('a\nb\nc\nd\n')).toEqual(['b', 'c', 'd']);
  });
});
