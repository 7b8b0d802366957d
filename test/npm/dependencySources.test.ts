/**
 * An npm package's dependency tree comes from the registry with integrity,
 * or not at all: npm resolves the tree first (lockfile only) and a
 * dependency from git (git itself never runs), a remote tarball URL or a
 * directory is refused before anything is unpacked.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli, fetchNpmPackage, parseNpmSpec } from '../../src/installer/npmFetch.js';
import { startRegistryOnlyProxy } from '../../src/installer/npmProxy.js';

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

  it('refuses a dependency from a tarball URL outside the registry, before it is unpacked and without ever requesting it', async () => {
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
      expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', source: 'url', url } });
      expect(existsSync(join(work, 'project', 'node_modules'))).toBe(false);
      // npm runs behind a proxy that reaches the registry only: the package made the host send no request elsewhere
      // (before, npm fetched the URL while it resolved the tree, from the host, and only the lockfile check refused it).
      expect(requested).toEqual([]);
    } finally {
      server.close();
    }
  });

  it('refuses an https tarball URL outside the registry without the host ever connecting to it', async () => {
    const dir = await mkdtemp(join(base, 'https-url-'));
    // Any TCP connection counts: npm reaches an https URL with a CONNECT through its proxy, then TLS.
    let connections = 0;
    const listener = createNetServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((listening) => listener.listen(0, '127.0.0.1', listening));
    try {
      const url = `https://127.0.0.1:${(listener.address() as AddressInfo).port}/tlsdep-1.0.0.tgz`;
      const tarball = await pack(dir, 'uses-https-url', { dependencies: { tlsdep: url } });
      const work = join(dir, 'work');
      await mkdir(work);
      const error = (await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work))._unsafeUnwrapErr();
      expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', source: 'url' } });
      expect(String(error.details['url'])).toContain(`127.0.0.1:${(listener.address() as AddressInfo).port}`);
      expect(connections).toBe(0);
    } finally {
      listener.close();
    }
  });

  /**
   * Installs a tarball whose dependency is an https URL of a local listener, with `env` set in the host's environment,
   * and answers whether the host connected to it (as soon as it does: npm would go on retrying) or npm's error.
   */
  async function httpsDependencyWith(env: Record<string, string>): Promise<'connected' | Awaited<ReturnType<typeof fetchNpmPackage>>> {
    const dir = await mkdtemp(join(base, 'host-proxy-'));
    let connected: () => void = () => undefined;
    const connection = new Promise<'connected'>((resolve) => {
      connected = () => resolve('connected');
    });
    const listener = createNetServer((socket) => {
      connected();
      socket.destroy();
    });
    await new Promise<void>((listening) => listener.listen(0, '127.0.0.1', listening));
    const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
    Object.assign(process.env, env);
    try {
      const url = `https://127.0.0.1:${(listener.address() as AddressInfo).port}/tlsdep-1.0.0.tgz`;
      const tarball = await pack(dir, `uses-https-url-${Object.keys(env).join('-').toLowerCase()}`, { dependencies: { tlsdep: url } });
      const work = join(dir, 'work');
      await mkdir(work);
      return await Promise.race([connection, fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work)]);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      listener.close();
    }
  }

  it('keeps npm behind the registry-only proxy for https when the host has only an http proxy of its own', async () => {
    // npm reaches an https URL through HTTPS_PROXY only: with HTTP_PROXY alone it connected to a dependency's https URL itself.
    const outcome = await httpsDependencyWith({ HTTP_PROXY: 'http://127.0.0.1:9' });
    expect(outcome).not.toBe('connected');
    if (outcome === 'connected') return;
    expect(outcome._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', source: 'url' } });
  });

  it("sends no dependency's URL around the host's own proxy by its NO_PROXY list", async () => {
    // The host's proxy (one that refuses all but the registry, as the host's own might) is where the URL goes;
    // NO_PROXY=127.0.0.1 sent it to the listener directly.
    const hostProxy = await startRegistryOnlyProxy('https://registry.npmjs.org/');
    try {
      const outcome = await httpsDependencyWith({ HTTPS_PROXY: hostProxy.url, NO_PROXY: '127.0.0.1' });
      expect(outcome).not.toBe('connected');
      if (outcome === 'connected') return;
      expect(outcome._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', source: 'url' } });
      expect(hostProxy.refused.length).toBeGreaterThan(0);
      expect(hostProxy.refused.every((url) => url.includes('127.0.0.1'))).toBe(true);
    } finally {
      await hostProxy.close();
    }
  });

  it('names a tarball URL npm could not fetch while resolving as the dependency source it is, and a registry 404 as npm failing', async () => {
    const dir = await mkdtemp(join(base, 'unfetchable-'));
    const requested: string[] = [];
    // Answers 404 to everything: the URL a dependency names, and the registry's page for any package.
    const server: Server = createServer((req, res) => {
      requested.push(req.url ?? '');
      res.statusCode = 404;
      res.end('{}');
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const url = `${origin}/gone/urldep-1.0.0.tgz`;
      const tarball = await pack(dir, 'uses-gone-url', { dependencies: { urldep: url } });
      const work = join(dir, 'work');
      await mkdir(work);
      const error = (await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work))._unsafeUnwrapErr();
      // The registry-only proxy ends the request: it never reaches the server.
      expect(requested).not.toContain('/gone/urldep-1.0.0.tgz');
      expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', source: 'url', url } });
      expect(error.hint).toMatch(/tarball URL/);
      expect(existsSync(join(work, 'project', 'node_modules'))).toBe(false);

      // The registry itself answering 404 is no dependency source: the spec or the registry is wrong.
      const other = join(dir, 'work-registry');
      await mkdir(other);
      const missing = (await fetchNpmPackage(parseNpmSpec('npm:not-published-here@1.0.0')._unsafeUnwrap(), other, { registry: `${origin}/` }))._unsafeUnwrapErr();
      expect(missing).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'npm_failed' } });
    } finally {
      server.close();
    }
  });

  it('refuses a peer dependency from a local tarball: only the tarball the caller named comes from a file', async () => {
    const dir = await mkdtemp(join(base, 'peer-file-'));
    // Any npm tarball on the host's disk: a private package someone packed, at a path the attacker can guess.
    const loot = await pack(dir, 'loot', {});
    const tarball = await pack(dir, 'uses-peer-file', { peerDependencies: { loot: `file:${loot}` } });
    const work = join(dir, 'work');
    await mkdir(work);
    const error = (await fetchNpmPackage(parseNpmSpec(`npm:${tarball}`)._unsafeUnwrap(), work))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source', dependencies: [{ path: 'node_modules/loot' }] } });
    expect(existsSync(join(work, 'project', 'node_modules'))).toBe(false);

    // The same tarball without the peer installs: the caller's own tarball is no foreign source.
    const plain = await pack(join(dir, 'plain'), 'uses-no-peer', {});
    const other = join(dir, 'work-plain');
    await mkdir(other);
    expect((await fetchNpmPackage(parseNpmSpec(`npm:${plain}`)._unsafeUnwrap(), other))._unsafeUnwrap().name).toBe('uses-no-peer');
  });

  it('installs the version it checked: one published between the resolution and the install, with a dependency from a URL, is never fetched', async () => {
    const dir = await mkdtemp(join(base, 'flip-'));
    const dependency = await pack(dir, 'urldep', {});
    await pack(dir, 'flip-server', {});
    await pack(dir, 'flip-server', { version: '1.0.1', dependencies: { urldep: 'URL' } });
    const requested: string[] = [];
    const server: Server = createServer((req, res) => {
      const path = req.url ?? '';
      requested.push(path);
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (path.endsWith('.tgz')) {
        void readFile(path.startsWith('/urldep') ? dependency : join(dir, basename(path))).then((bytes) => res.end(bytes));
        return;
      }
      // The registry's answer for the package: 1.0.0 the first time it is asked, then a 1.0.1 that takes a dependency from a URL.
      const published = requested.filter((p) => p === '/flip-server').length === 1 ? ['1.0.0'] : ['1.0.0', '1.0.1'];
      const versions = Object.fromEntries(
        published.map((version) => {
          const file = join(dir, `flip-server-${version}.tgz`);
          const integrity = `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
          const dependencies = version === '1.0.1' ? { urldep: `${origin}/urldep-1.0.0.tgz` } : {};
          return [version, { name: 'flip-server', version, dependencies, bin: { 'flip-server': 'index.js' }, dist: { tarball: `${origin}/${basename(file)}`, integrity } }];
        }),
      );
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'no-store');
      res.end(JSON.stringify({ name: 'flip-server', 'dist-tags': { latest: published.at(-1) }, versions }));
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const work = join(dir, 'work');
      await mkdir(work);
      const fetched = await fetchNpmPackage(parseNpmSpec('npm:flip-server@^1.0.0')._unsafeUnwrap(), work, { registry });
      expect(fetched._unsafeUnwrap().version).toBe('1.0.0');
      expect(existsSync(join(work, 'project', 'node_modules', 'flip-server', 'node_modules', 'urldep'))).toBe(false);
      expect(requested).not.toContain('/urldep-1.0.0.tgz');
    } finally {
      server.close();
    }
  });
});
