/**
 * A registry on loopback that serves one npm package at the versions given,
 * each from its packed tarball (with its sha512 integrity), for tests that
 * install the same name from two registries.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Serves `name` at each version of `versions` (version → tarball path), its
 * executable `bin` named like the package; `latest` is the last version
 * given. The server joins `servers` (the test closes them); the URL ends with `/`.
 */
export async function serveNpmVersions(servers: Server[], name: string, bin: string, versions: Readonly<Record<string, string>>): Promise<string> {
  const files = new Map<string, { bytes: Buffer; integrity: string }>();
  for (const [version, tarball] of Object.entries(versions)) {
    const bytes = await readFile(tarball);
    files.set(version, { bytes, integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}` });
  }
  const server: Server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const tarball = /-(\d+\.\d+\.\d+)\.tgz$/.exec(req.url ?? '');
    if (tarball !== null) return void res.end(files.get(tarball[1] ?? '')?.bytes ?? '');
    if (req.url !== `/${name}`) {
      res.statusCode = 404;
      return void res.end('{"error":"not found"}');
    }
    res.setHeader('content-type', 'application/json');
    const listed = Object.fromEntries(
      [...files].map(([version, file]) => [version, { name, version, bin: { [name]: bin }, dist: { tarball: `${origin}/${name}-${version}.tgz`, integrity: file.integrity } }]),
    );
    res.end(JSON.stringify({ name, 'dist-tags': { latest: Object.keys(versions).at(-1) }, versions: listed }));
  });
  servers.push(server);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}
