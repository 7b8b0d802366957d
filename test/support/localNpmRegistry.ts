/**
 * A registry on loopback that serves npm packages at the versions given,
 * each from its packed tarball (with its sha512 integrity), for tests that
 * install the same name from two registries, or two names from one.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One package a local registry serves: its executable `bin` (named like the package) and version → tarball path; `latest` is the last. */
export interface ServedPackage {
  readonly bin: string;
  readonly versions: Readonly<Record<string, string>>;
}

/**
 * Serves each package of `packages` (name → package). The server joins
 * `servers` (the test closes them); the URL ends with `/`.
 */
export async function serveNpmPackages(servers: Server[], packages: Readonly<Record<string, ServedPackage>>): Promise<string> {
  const files = new Map<string, { bytes: Buffer; integrity: string }>();
  for (const [name, served] of Object.entries(packages)) {
    for (const [version, tarball] of Object.entries(served.versions)) {
      const bytes = await readFile(tarball);
      files.set(`${name}@${version}`, { bytes, integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}` });
    }
  }
  const server: Server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const url = decodeURIComponent(req.url ?? '');
    const tarball = /^\/(.+)-(\d+\.\d+\.\d+)\.tgz$/.exec(url);
    if (tarball !== null) return void res.end(files.get(`${tarball[1]}@${tarball[2]}`)?.bytes ?? '');
    const name = url.slice(1);
    const served = Object.hasOwn(packages, name) ? packages[name] : undefined;
    if (served === undefined) {
      res.statusCode = 404;
      return void res.end('{"error":"not found"}');
    }
    res.setHeader('content-type', 'application/json');
    const listed = Object.fromEntries(
      Object.keys(served.versions).map((version) => [
        version,
        { name, version, bin: { [name]: served.bin }, dist: { tarball: `${origin}/${name}-${version}.tgz`, integrity: files.get(`${name}@${version}`)?.integrity } },
      ]),
    );
    res.end(JSON.stringify({ name, 'dist-tags': { latest: Object.keys(served.versions).at(-1) }, versions: listed }));
  });
  servers.push(server);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** Serves the one package `name` at each version of `versions` (version → tarball path); see {@link serveNpmPackages}. */
export function serveNpmVersions(servers: Server[], name: string, bin: string, versions: Readonly<Record<string, string>>): Promise<string> {
  return serveNpmPackages(servers, { [name]: { bin, versions } });
}
