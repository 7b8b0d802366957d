/**
 * A server that writes into its own package directory at start, as gitnexus
 * copies a native file into its package folder: the install root is
 * read-only in the sandbox, so the start dies with EROFS or EACCES on a path
 * under it. The failed introspection says so (`details.install_root_write`,
 * a hint that begins with it) and does not blame the Node range its package
 * declares. The packages are packed locally with `npm pack`.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// Copies a file of its own next to itself before it serves (copyFileSync, as a native addon is put in place), then one tool.
// 'errno' lets the copy's error kill it (Node prints the EROFS/EACCES line); 'swallowed' catches it and says what gitnexus@1.6.12
// says, its package directory on a line of its own and no errno.
const serverSource = (mode: 'errno' | 'swallowed'): string => `#!/usr/bin/env node
import { copyFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
const target = fileURLToPath(new URL('./addon.node', import.meta.url));
const copy = () => copyFileSync(fileURLToPath(new URL('./addon.src', import.meta.url)), target);
if (${JSON.stringify(mode)} === 'errno') copy();
else {
  try { copy(); } catch {
    console.error('The prebuilt binary IS present in the platform sub-package — only copying it into\\n  ' + dirname(target) + '\\nwas refused, which is a filesystem permission problem (read-only or non-writable\\nnode_modules), not a skipped install script.');
    process.exit(1);
  }
}
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'own-tree', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'ping', inputSchema: { type: 'object' } }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function packOwnTreeWriter(dir: string, name: string, engines: Record<string, string>, mode: 'errno' | 'swallowed' = 'errno'): Promise<string> {
  const pkg = join(dir, name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), serverSource(mode), { mode: 0o755 });
  await writeFile(join(pkg, 'bin', 'addon.src'), 'native bytes');
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', bin: 'bin/server.mjs', engines }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-1.0.0.tgz`);
}

describe('npm: a server that writes into its own package directory at start', { timeout: 120_000 }, () => {
  it('says the server writes into its read-only package directory, not that the Node range is the likely cause', async () => {
    const work = await pool.profile();
    // A range that leaves out every Node: the engines guess would otherwise lead the hint.
    const tarball = await packOwnTreeWriter(work, 'writes-own-tree', { node: '>=99.0.0' });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(String(error.details['stderr_tail'])).toMatch(/EROFS|EACCES|EPERM/);
    const written = String(error.details['install_root_write']);
    expect(written).toMatch(/\/bin\/addon\.node$/);
    expect(error.hint.startsWith(`The server writes into its own package directory (${written}), which the host keeps read-only`)).toBe(true);
    expect(error.hint).toContain('must write to its data directory ($HOME) or TMPDIR instead');
    expect(error.hint).toContain('may take an option naming another (an argument with ${data_dir}');
    expect(error.hint).toContain('report it upstream');
    expect(error.details['engines']).toBeUndefined();
    expect(error.hint).not.toContain('the likely cause');
    // wrap starts it the same way and says the same.
    const wrapped = (await host.wrap(`npm:${tarball}`))._unsafeUnwrapErr();
    expect(wrapped.details['install_root_write']).toMatch(/\/bin\/addon\.node$/);
  });

  it("reads gitnexus's own words, which name the package directory and no errno", async () => {
    const work = await pool.profile();
    const tarball = await packOwnTreeWriter(work, 'swallows-errno', { node: '>=99.0.0' }, 'swallowed');
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(String(error.details['stderr_tail'])).not.toMatch(/EROFS|EACCES|EPERM/);
    const written = String(error.details['install_root_write']);
    expect(written).toMatch(/\/bin$/);
    expect(error.hint.startsWith(`The server writes into its own package directory (${written})`)).toBe(true);
    expect(error.details['engines']).toBeUndefined();
  });

  it('says nothing of the package directory for a refused write elsewhere', async () => {
    const work = await pool.profile();
    const pkg = join(work, 'writes-elsewhere');
    await mkdir(join(pkg, 'bin'), { recursive: true });
    await writeFile(join(pkg, 'bin', 'server.mjs'), "#!/usr/bin/env node\nimport { writeFileSync } from 'node:fs';\nwriteFileSync('/usr/lib/not-mine.node', 'x');\n", { mode: 0o755 });
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'writes-elsewhere', version: '1.0.0', type: 'module', bin: 'bin/server.mjs' }));
    execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', work], { cwd: pkg, stdio: 'ignore' });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${join(work, 'writes-elsewhere-1.0.0.tgz')}`, { canary: false }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(String(error.details['stderr_tail'])).toMatch(/(EROFS|EACCES|EPERM|ENOENT).*\/usr\/lib\/not-mine\.node/);
    expect(error.details['install_root_write']).toBeUndefined();
    expect(error.hint).not.toContain('its own package directory');
  });
});
