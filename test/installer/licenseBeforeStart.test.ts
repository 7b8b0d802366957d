/**
 * A host that requires a LICENSE file (requireLicense, the `gum` preset's
 * default) refuses a package without one before its introspection start:
 * whether the file is there needs no tool list, and the server of an npm
 * package (or an MCP Bundle) that ships no manifest ran, with the network the
 * install granted, before the install refused it `PLUGIN_LICENSE_MISSING`
 * (review R12 F5). A real install of a packed npm tarball, a real sandboxed
 * start; the start leaves its marker by connecting to a listener of the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';
import { StartMarker } from '../support/startMarker.js';

const pool = new HostPool();
let base: string;
let marker: StartMarker;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'license-start-'));
  marker = await new StartMarker().listen();
});
afterEach(() => pool.cleanup());
afterAll(async () => {
  await pool.cleanup();
  await marker.close();
  await rm(base, { recursive: true, force: true });
});

/** `name`@1.0.0 packed by npm, with no manifest (the host introspects it), with or without a LICENSE file. */
async function pack(name: string, license: boolean): Promise<string> {
  const pkg = join(await mkdtemp(join(base, 'pack-')), name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), marker.serverSource('license-start'), { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', license: 'MIT', bin: { [name]: 'bin/server.mjs' } }));
  if (license) await writeFile(join(pkg, 'LICENSE'), 'MIT License\n');
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', join(pkg, '..')], { cwd: pkg, stdio: 'ignore' });
  return join(pkg, '..', `${name}-1.0.0.tgz`);
}

describe('a package without the LICENSE file the host requires', { timeout: 300_000 }, () => {
  it('is refused before its introspection start, asked or not; with the file it starts and installs', async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', requireLicense: true });
    const unlicensed = `npm:${await pack('license-start-none', false)}`;
    const before = marker.starts;
    const unasked = (await host.install(unlicensed, { canary: false, grant: { network: true } }))._unsafeUnwrapErr();
    expect(unasked).toMatchObject({ code: 'PLUGIN_LICENSE_MISSING', details: { plugin_id: 'license-start-none', source: 'npm' } });
    const asked = (await host.install(unlicensed, { canary: false, grant: { network: true }, accept: () => true }))._unsafeUnwrapErr();
    expect(asked).toMatchObject({ code: 'PLUGIN_LICENSE_MISSING' });
    expect(marker.starts).toBe(before);
    // The control: the same server with a LICENSE file is started (it reached the marker) and installed.
    const licensed = await host.install(`npm:${await pack('license-start-some', true)}`, { canary: false, grant: { network: true }, accept: () => true });
    expect(licensed.isOk(), JSON.stringify(licensed)).toBe(true);
    expect(marker.starts).toBeGreaterThan(before);
  });
});
