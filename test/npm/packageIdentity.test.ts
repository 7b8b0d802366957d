/**
 * An npm package installed from a registry is the package and version npm
 * resolved, whatever its tarball's package.json claims: a published tarball
 * whose package.json names another package (or another version) than the
 * registry lists it under is refused, since the generated manifest's plugin
 * id, name, version and namespace owner (`npm:<name>`) would otherwise be
 * the tarball's claim, shown to the person asked to trust it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli, fetchNpmPackage, parseNpmSpec } from '../../src/installer/npmFetch.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-identity-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

/** A tarball whose package.json says `claimed`, made by npm pack. */
async function packClaiming(dir: string, claimed: { name: string; version: string }): Promise<string> {
  const pkg = join(dir, 'src');
  await mkdir(pkg, { recursive: true });
  await writeFile(join(pkg, 'index.js'), '#!/usr/bin/env node\n');
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ ...claimed, bin: { server: 'index.js' } }));
  const out = join(dir, 'out');
  await mkdir(out);
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', out], { cwd: pkg, stdio: 'ignore' });
  const [file] = execFileSync('ls', [out], { encoding: 'utf8' }).trim().split('\n');
  return join(out, file!);
}

/** A registry listing `listed` (name@version) with `tarball` as its bytes. */
async function registryServing(listed: { name: string; version: string }, tarball: string): Promise<{ url: string; server: Server }> {
  const bytes = await readFile(tarball);
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const server: Server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if ((req.url ?? '').endsWith('.tgz')) return void res.end(bytes);
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        name: listed.name,
        'dist-tags': { latest: listed.version },
        versions: { [listed.version]: { ...listed, bin: { server: 'index.js' }, dist: { tarball: `${origin}/${listed.name}-${listed.version}.tgz`, integrity } } },
      }),
    );
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

describe('npm package identity', { timeout: 120_000 }, () => {
  for (const claimed of [
    { name: '@modelcontextprotocol/server-filesystem', version: '1.0.0' },
    { name: 'listed-server', version: '9.9.9' },
  ]) {
    it(`refuses a tarball of listed-server@1.0.0 whose package.json claims ${claimed.name}@${claimed.version}`, async () => {
      const dir = await mkdtemp(join(base, 'claim-'));
      const registry = await registryServing({ name: 'listed-server', version: '1.0.0' }, await packClaiming(dir, claimed));
      try {
        const work = join(dir, 'work');
        await mkdir(work);
        const fetched = await fetchNpmPackage(parseNpmSpec('npm:listed-server@1.0.0')._unsafeUnwrap(), work, { registry: registry.url });
        expect(fetched._unsafeUnwrapErr()).toMatchObject({
          code: 'PLUGIN_NPM_INSTALL_FAILED',
          details: { reason: 'package_mismatch', resolved: 'listed-server@1.0.0', claimed: `${claimed.name}@${claimed.version}` },
        });
      } finally {
        registry.server.close();
      }
    });
  }
});
