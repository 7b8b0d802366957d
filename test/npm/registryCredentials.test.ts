/**
 * Registry credentials reach npm without its command line and never come
 * back in an error: a registry URL with a user and password, or a token, is
 * given to npm as its userconfig through a pipe, never in a file (so a host
 * killed mid-install leaves none behind), and the password, the token and
 * their encodings are redacted from what npm printed. A local registry
 * (node:http) that answers only with the right Authorization header, and an
 * npm wrapper that records its argv.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli, fetchNpmPackage, parseNpmSpec, type NpmSettings } from '../../src/installer/npmFetch.js';

const USER = 'ci-user';
const PASSWORD = 'pw-9f3c1e77d0b24a5e';
const TOKEN = 'npm_tok_51c0ffee9a8b7c6d5e4f';

let base: string;
let tarball: string;
let argvLog: string;
let wrapper: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'npm-registry-auth-'));
  const pkg = join(base, 'src');
  await mkdir(pkg);
  await writeFile(join(pkg, 'index.js'), '#!/usr/bin/env node\n');
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'private-server', version: '1.0.0', bin: { server: 'index.js' } }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', base], { cwd: pkg, stdio: 'ignore' });
  tarball = join(base, 'private-server-1.0.0.tgz');
  argvLog = join(base, 'argv.log');
  wrapper = join(base, 'npm-wrapper.cjs');
  await writeFile(wrapper, `require('node:fs').appendFileSync(${JSON.stringify(argvLog)}, JSON.stringify(process.argv) + '\\n');\nrequire(${JSON.stringify(bundledNpmCli())});\n`);
});
afterAll(() => rm(base, { recursive: true, force: true }));

/**
 * A registry serving private-server@1.0.0 only to requests carrying
 * `authorization`; it records every header it got. Its tarball is listed
 * under `tarballHost`.
 */
async function privateRegistry(authorization: string, tarballHost = '127.0.0.1'): Promise<{ origin: string; seen: (string | undefined)[]; server: Server }> {
  const bytes = await readFile(tarball);
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const seen: (string | undefined)[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.headers.authorization);
    if (req.headers.authorization !== authorization) {
      res.statusCode = 401;
      return void res.end('{"error":"authentication required"}');
    }
    const origin = `http://${tarballHost}:${(server.address() as AddressInfo).port}`;
    if ((req.url ?? '').endsWith('.tgz')) return void res.end(bytes);
    if (req.url !== '/private-server') {
      res.statusCode = 404;
      return void res.end('{"error":"not found"}');
    }
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        name: 'private-server',
        'dist-tags': { latest: '1.0.0' },
        versions: { '1.0.0': { name: 'private-server', version: '1.0.0', bin: { server: 'index.js' }, dist: { tarball: `${origin}/private-server-1.0.0.tgz`, integrity } } },
      }),
    );
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return { origin: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** The files under `dir` that hold the password, the token or the base64 of user:password. */
function filesHoldingSecrets(dir: string): string[] {
  const found = spawnSync('grep', ['-rlF', '-e', PASSWORD, '-e', TOKEN, '-e', Buffer.from(`${USER}:${PASSWORD}`).toString('base64'), dir], { encoding: 'utf8' });
  return found.stdout.split('\n').filter((line) => line !== '');
}

async function fetchWith(spec: string, npm: NpmSettings): Promise<{ outcome: Awaited<ReturnType<typeof fetchNpmPackage>>; argv: string }> {
  await rm(argvLog, { force: true });
  const work = await mkdtemp(join(base, 'work-'));
  const outcome = await fetchNpmPackage(parseNpmSpec(spec)._unsafeUnwrap(), work, { cli: wrapper, ...npm });
  // npm's cache and logs (_logs) are in the staging home: nothing of all it wrote holds a secret.
  expect(filesHoldingSecrets(work)).toEqual([]);
  return { outcome, argv: await readFile(argvLog, 'utf8') };
}

const basic = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

describe('npm registry credentials', { timeout: 120_000 }, () => {
  it('a user and password in the registry URL authenticate every request, and never reach npm argv', async () => {
    const registry = await privateRegistry(basic);
    try {
      const { outcome, argv } = await fetchWith('npm:private-server@1.0.0', { registry: `http://${USER}:${PASSWORD}@${registry.origin}/` });
      // The registry recorded for the package (its lock row, its credentials' origin) is the URL without user or password.
      expect(outcome._unsafeUnwrap()).toMatchObject({ name: 'private-server', version: '1.0.0', registry: `http://${registry.origin}/` });
      expect(registry.seen.length).toBeGreaterThan(0);
      expect(registry.seen.every((header) => header === basic)).toBe(true);
      expect(argv).toContain(`http://${registry.origin}/`);
      expect(argv).not.toContain(PASSWORD);
    } finally {
      registry.server.close();
    }
  });

  it('a token authenticates as a bearer token, and never reaches npm argv', async () => {
    const registry = await privateRegistry(`Bearer ${TOKEN}`);
    try {
      const { outcome, argv } = await fetchWith('npm:private-server@1.0.0', { registry: `http://${registry.origin}/`, token: TOKEN });
      expect(outcome._unsafeUnwrap()).toMatchObject({ name: 'private-server', version: '1.0.0' });
      expect(registry.seen.every((header) => header === `Bearer ${TOKEN}`)).toBe(true);
      expect(argv).not.toContain(TOKEN);
    } finally {
      registry.server.close();
    }
  });

  it('a host killed (SIGKILL) while npm talks to the registry leaves no file holding the credentials', async () => {
    // A registry that never answers: npm has read its configuration and is waiting on the registry when the host is killed.
    let asked: (authorization: string | undefined) => void = () => undefined;
    const firstRequest = new Promise<string | undefined>((resolve) => (asked = resolve));
    const registry = createServer((req) => asked(req.headers.authorization));
    await new Promise<void>((listening) => registry.listen(0, '127.0.0.1', listening));
    const work = await mkdtemp(join(base, 'killed-'));
    const script = join(base, 'install-then-wait.mts');
    const fetchModule = new URL('../../src/installer/npmFetch.ts', import.meta.url).pathname;
    const origin = `http://${USER}:${PASSWORD}@127.0.0.1:${(registry.address() as AddressInfo).port}/`;
    await writeFile(
      script,
      `import { fetchNpmPackage, parseNpmSpec } from ${JSON.stringify(fetchModule)};\n` +
        `await fetchNpmPackage(parseNpmSpec('npm:private-server@1.0.0')._unsafeUnwrap(), ${JSON.stringify(work)}, { registry: ${JSON.stringify(origin)}, token: ${JSON.stringify(TOKEN)} });\n`,
    );
    // Its own process group: the host and the npm it started are killed together, as a container's processes are.
    const host = spawn(process.execPath, ['--import', 'tsx', script], { detached: true, stdio: 'ignore' });
    const exited = new Promise((resolve) => host.once('exit', resolve));
    try {
      expect(await firstRequest).toBe(`Bearer ${TOKEN}`);
      process.kill(-(host.pid ?? 0), 'SIGKILL');
      await exited;
      expect(filesHoldingSecrets(work)).toEqual([]);
    } finally {
      if (host.exitCode === null && host.signalCode === null) process.kill(-(host.pid ?? 0), 'SIGKILL');
      registry.closeAllConnections();
      registry.close();
    }
  });

  it('a malformed % escape in the password is an invalid registry option, not an I/O error, and is not quoted', async () => {
    const work = await mkdtemp(join(base, 'work-'));
    const outcome = await fetchNpmPackage(parseNpmSpec('npm:private-server@1.0.0')._unsafeUnwrap(), work, { cli: wrapper, registry: `http://${USER}:p%zz${PASSWORD}@127.0.0.1:9/` });
    const error = outcome._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option: 'npm.registry' } });
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(PASSWORD);
  });

  it('a refused install names the registry without its password', async () => {
    // The tarball listed on another host than the registry's: the tree is refused before anything is fetched.
    const registry = await privateRegistry(basic, 'localhost');
    try {
      const { outcome } = await fetchWith('npm:private-server@1.0.0', { registry: `http://${USER}:${PASSWORD}@${registry.origin}/` });
      const error = outcome._unsafeUnwrapErr();
      expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'dependency_source' } });
      expect(error.message).toContain(`resolve outside the registry http://${registry.origin}/`);
      const text = JSON.stringify({ message: error.message, details: error.details });
      for (const secret of [PASSWORD, Buffer.from(`${USER}:${PASSWORD}`).toString('base64')]) expect(text).not.toContain(secret);
    } finally {
      registry.server.close();
    }
  });
});
