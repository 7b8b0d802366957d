/**
 * On a root host every plugin runs as a user of its own, and the install's
 * introspection runs the server of a package nobody has accepted yet. That
 * server must share no user with an installed plugin: not with one whose id
 * is the introspection's own sandbox name (`npm-introspection`, a valid
 * plugin id), nor with any other. Real host, real launcher, real npm pack.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { DEFAULT_PLUGIN_UID_RANGE } from '../../src/sandbox/pluginIdentity.js';
import { HostPool } from '../support/hostHarness.js';

const INSTALL_NODE = fileURLToPath(new URL('../../fixtures/plugins/install-node', import.meta.url));

const pool = new HostPool();
afterAll(() => pool.cleanup());

// A server whose one tool is named after the user it runs as.
const UID_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'uid', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'uid_' + process.getuid(), inputSchema: { type: 'object' } }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function packUidServer(dir: string): Promise<string> {
  const pkg = join(dir, 'uid-teller');
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'uid.mjs'), UID_SERVER, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'uid-teller', version: '1.0.0', type: 'module', bin: { 'uid-teller': 'bin/uid.mjs' } }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'uid-teller-1.0.0.tgz');
}

describe('the introspection user on a root host', () => {
  it.runIf(process.getuid?.() === 0)('is no plugin\'s, not even that of a plugin named npm-introspection', { timeout: 120_000 }, async () => {
    const profile = await pool.profile();
    const pkg = join(profile, 'named-like-introspection');
    await cp(INSTALL_NODE, pkg, { recursive: true });
    const manifest = JSON.parse(await readFile(join(pkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    manifest['plugin_id'] = 'npm-introspection';
    await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
    const installer = await pool.open(profile);
    expect((await installer.install(pkg, { canary: false })).isOk()).toBe(true);
    const host = await pool.open(profile);
    const called = await host.call('plug.npm-introspection.greet', { name: 'a' });
    expect(called.isOk() ? 'ok' : called.error).toBe('ok');
    const pluginUid = (await stat(join(profile, 'data', 'npm-introspection'))).uid;
    expect(pluginUid).toBeGreaterThan(DEFAULT_PLUGIN_UID_RANGE.first);

    const wrapped = (await host.wrap(`npm:${await packUidServer(profile)}`))._unsafeUnwrap();
    const listed = /"uid_(\d+)"/.exec(wrapped.manifestText);
    expect(Number(listed?.[1])).not.toBe(pluginUid);
    expect(Number(listed?.[1])).toBe(DEFAULT_PLUGIN_UID_RANGE.first);
  });
});
