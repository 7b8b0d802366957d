/**
 * An npm package's dependency tree comes from the registry with integrity,
 * or not at all: npm resolves the tree first (lockfile only) and a
 * dependency from git (git itself never runs), a remote tarball URL or a
 * directory is refused before anything is unpacked.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli, fetchNpmPackage, parseNpmSpec } from '../../src/installer/npmFetch.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-sources-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

/** Packs `<dir>/<name>` with `package.json` fields and returns the tarball. */
async function pack(dir: string, name: string, fields: Record<string, unknown>): Promise<string> {
  const pkg = join(dir, name);
  await mkdir(pkg, { recursive: true });
  await writeFile(join(pkg, 'index.js'), '#!/usr/bin/env node\n');
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', bin: { [name]: 'index.js' }, ...fields }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, `${name}-1.0.0.tgz`);
}

describe('npm dependency sources', { timeout: 120_000 }, () => {
  it('refuses a dependency from a git repository before git runs', async () => {
    const dir = await mkdtemp(join(base, 'git-'));
    const repo = join(dir, 'repo');
    await mkdir(repo);
    await writeFile(join(repo, 'package.json'), JSON.stringify({ name: 'gitdep', version: '1.0.0' }));
    const git = (...args: string[]): void => void execFileSync('git', ['-c', 'user.email=t@example.org', '-c', 'user.name=t', ...args], { cwd: repo, stdio: 'ignore' });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'dep');
    const tarball = await pack(dir, 'uses-git', { dependencies: { gitdep: `git+file://${repo}` } });
    const work = join(dir, 'work');
    await mkdir(work);
    const fetched = await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work);
    expect(fetched._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', source: 'git' } });
    expect(existsSync(join(work, 'project', 'node_modules'))).toBe(false);
  });

  it('refuses a dependency from a tarball URL outside the registry, before it is unpacked', async () => {
    const dir = await mkdtemp(join(base, 'url-'));
    const dependency = await pack(dir, 'urldep', {});
    const requested: string[] = [];
    const server: Server = createServer((req, res) => {
      requested.push(req.url ?? '');
      void readFile(dependency).then((bytes) => res.end(bytes));
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/urldep-1.0.0.tgz`;
      const tarball = await pack(dir, 'uses-url', { dependencies: { urldep: url } });
      const work = join(dir, 'work');
      await mkdir(work);
      const error = (await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work))._unsafeUnwrapErr();
      expect(error).toMatchObject({
        code: 'PLUGIN_NPM_INSTALL_FAILED',
        details: { reason: 'dependency_source', dependencies: [{ path: 'node_modules/uses-url/node_modules/urldep', resolved: url }] },
      });
      expect(existsSync(join(work, 'project', 'node_modules'))).toBe(false);
    } finally {
      server.close();
    }
  });
});
