/**
 * The loopback origin the egress tests reach through the host's proxy: a
 * resolver hook that maps the test's names to a documentation address and
 * routes every dial to one local HTTP server answering `origin <host><path>`,
 * with the host pool and the per-file hooks that start and stop them.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { EgressResolver } from '../../src/egress/EgressProxy.js';
import { HostPool, removePackages } from './hostHarness.js';

/**
 * The test file's loopback HTTP origin answering `origin <host><path>`, listening from the file's first
 * `beforeAll` (register it before hooks that read its port) until its `afterAll`.
 */
export function loopbackOrigin(): { readonly port: () => number } {
  const origin = createServer((req, res) => res.end(`origin ${req.headers.host ?? ''}${req.url ?? ''}`));
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => origin.listen({ host: '127.0.0.1', port: 0 }, resolve));
    port = (origin.address() as AddressInfo).port;
  });
  afterAll(() => void origin.close());
  return { port: () => port };
}

/** A host pool and a resolver for which `resolves(name)` names resolve, every one served by the test origin. */
export function egressTestOrigin(resolves: (name: string) => boolean): { readonly pool: HostPool; readonly resolver: EgressResolver } {
  const pool = new HostPool();
  const origin = loopbackOrigin();
  const resolver: EgressResolver = {
    resolve: (name) => Promise.resolve(resolves(name) ? ['203.0.113.30'] : []),
    route: () => ({ host: '127.0.0.1', port: origin.port() }),
  };
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());
  return { pool, resolver };
}
