/**
 * Through the CLI, each step a real process on one profile: a credential
 * stored with `setup` for one archive does not reach a different archive
 * installed under the same plugin id (same name, same owner; its tool prints
 * the key it was given); `remove --forget-secrets` forgets the credentials
 * of a plugin removed before; and `setup --set NAME` does not read a
 * denylisted NAME from the CLI's own environment.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, tempDir, type CliRun } from './cliHarness.js';
import { tgzOfDirectory } from '../installer/InstallerHarness.js';
import { keyedManifest } from '../support/keyedPackage.js';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';

const SLOW = 300_000;
const ID = 'perplexity-search';
const STORED = 'pplx-stored-3f9a0b1c77';
const HOST_VALUE = 'pplx-host-e81d22c4a0';

// Its one tool, `key`, answers with the PERPLEXITY_API_KEY it was given, as a package after the key would.
const SERVER = stdioMcpServerSource({
  name: 'keyed',
  tools: [{ name: 'key', inputSchema: { type: 'object' } }],
  call: "send({ id, result: { content: [{ type: 'text', text: 'key: ' + String(process.env.PERPLEXITY_API_KEY) }] } });",
});

describe('stored credentials through the CLI', () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  let profile: string;
  const archives: Record<string, { path: string; checksum: string }> = {};
  const inProfile = (args: readonly string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<CliRun> =>
    cli([...args, '--profile-dir', profile], options);
  const install = (which: string): Promise<CliRun> => inProfile(['install', archives[which]!.path, '--checksum', archives[which]!.checksum, '--skip-canary']);

  /** A .tgz of the keyed server under {@link ID}; `note` changes its bytes. */
  const pack = async (name: string, version: string, note: string): Promise<void> => {
    const pkg = join(scratch.path, name);
    await mkdir(join(pkg, 'bin'), { recursive: true });
    await writeFile(join(pkg, 'bin', 'keyed.mjs'), `${SERVER}// ${note}\n`, { mode: 0o755 });
    const identity = { plugin_id: ID, name: 'Perplexity search', version, namespace_owner: 'io.example.perplexity' };
    await writeFile(join(pkg, 'manifest.json'), JSON.stringify(keyedManifest({ ...identity, tool: { name: 'key', description: 'Answers with its key' } })));
    const path = join(scratch.path, `${name}.tgz`);
    await tgzOfDirectory(pkg, path);
    archives[name] = { path, checksum: `sha256:${createHash('sha256').update(await readFile(path)).digest('hex')}` };
  };

  beforeAll(async () => {
    scratch = await tempDir('cli-credential-origin-');
    profile = join(scratch.path, 'profile');
    await pack('genuine', '1.0.0', 'the genuine package');
    await pack('claimant', '1.0.1', 'another package claiming the id');
  }, SLOW);
  afterAll(() => scratch.dispose());

  it('a different archive installed under the id is not given the stored key; it needs setup', { timeout: SLOW }, async () => {
    expect((await install('genuine')).code).toBe(0);
    const setup = await inProfile(['setup', ID, '--set', 'perplexity-key=-'], { input: `${STORED}\n` });
    expect(setup.code).toBe(0);
    const genuine = await inProfile(['run', ID, 'key', '{}']);
    expect(genuine.stdout).toContain(`key: ${STORED}`);

    // Same id, same owner, higher version, no new power: on the old code no question, and `run` printed the key.
    const claimed = await install('claimant');
    expect(claimed.code).toBe(0);
    const info = json(await inProfile(['info', ID, '--json']));
    expect(info.plugin).toMatchObject({ version: '1.0.1', status: 'needs_configuration' });
    const refused = await inProfile(['run', ID, 'key', '{}']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error PLUGIN_NEEDS_CONFIGURATION: /);
    expect(refused.stdout + refused.stderr).not.toContain(STORED);
  });

  it('setup --set PERPLEXITY_API_KEY (no value) does not read the CLI\'s own environment', { timeout: SLOW }, async () => {
    const bare = await inProfile(['setup', ID, '--set', 'PERPLEXITY_API_KEY'], { env: { PERPLEXITY_API_KEY: HOST_VALUE } });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^error HOST_INVALID_OPTIONS: --set PERPLEXITY_API_KEY would read \$PERPLEXITY_API_KEY from this shell's environment/);
    expect(bare.stderr).toContain('--set PERPLEXITY_API_KEY=-');
    // A seed prefix is refused the same way, declared or not.
    const seed = await inProfile(['setup', ID, '--set', 'GUM_TOKEN'], { env: { GUM_TOKEN: HOST_VALUE } });
    expect(seed.code).toBe(2);
    expect(seed.stderr).toMatch(/^error HOST_INVALID_OPTIONS: --set GUM_TOKEN would read/);
    const run = await inProfile(['run', ID, 'key', '{}'], { env: { PERPLEXITY_API_KEY: HOST_VALUE } });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).not.toContain(HOST_VALUE);
  });

  it('remove --forget-secrets forgets the credentials of a plugin removed before', { timeout: SLOW }, async () => {
    expect((await inProfile(['remove', ID])).code).toBe(0);
    // The genuine package, reinstalled after a plain remove, gets its key back.
    expect((await install('genuine')).code).toBe(0);
    expect((await inProfile(['setup', ID, '--set', 'perplexity-key=-'], { input: `${STORED}\n` })).code).toBe(0);
    expect((await inProfile(['remove', ID])).code).toBe(0);
    expect((await install('genuine')).code).toBe(0);
    expect((await inProfile(['run', ID, 'key', '{}'])).stdout).toContain(`key: ${STORED}`);

    expect((await inProfile(['remove', ID])).code).toBe(0);
    // On the old code: PLUGIN_NOT_FOUND, exit 1, and the key stayed for the next install.
    const forgotten = await inProfile(['remove', ID, '--forget-secrets', '--json']);
    expect(forgotten.code).toBe(0);
    expect(json(forgotten)).toEqual({ ok: true, plugin_id: ID, removed: false, credentials_deleted: true });
    expect((await install('genuine')).code).toBe(0);
    const run = await inProfile(['run', ID, 'key', '{}']);
    expect(run.stderr).toMatch(/^error PLUGIN_NEEDS_CONFIGURATION: /);
    expect(run.stdout).not.toContain(STORED);
    // Without --forget-secrets, a plugin not installed is still not found.
    expect((await inProfile(['remove', ID])).code).toBe(0);
    expect((await inProfile(['remove', ID])).stderr).toMatch(/^error PLUGIN_NOT_FOUND: /);
  });
});
