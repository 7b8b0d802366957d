/**
 * Egress allowlist overhead (issue 19), each against a baseline in the same run:
 * - a plain HTTP request through the whole egress path (the plugin's proxy
 *   address, the host's listener in the sandbox's network namespace, the
 *   host proxy's checks and dial, the origin) against a direct request to an
 *   origin on the sandbox's own loopback, both timed inside one sandboxed
 *   plugin, a new connection per request;
 * - a sandboxed spawn of /bin/true with a destination list (the host opens
 *   its listener in the sandbox before the plugin runs) against the same
 *   spawn without one.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unverifiedCommand } from '../src/process/spawnPluginProcess.js';
import { nodeRuntimePaths } from '../src/sandbox/backends.js';
import { SandboxSpawner } from '../src/sandbox/SandboxSpawner.js';
import { median, percentile, result, timeMs, type BenchResult } from './harness.js';

const REQUESTS = 200;
const SPAWNS = 60;

// Runs in the sandbox with the host's Node: alternates a request through the proxy and one to its own loopback origin.
const REQUEST_TIMER = `
const http = require('http');
const count = Number(process.argv[1]);
const origin = http.createServer((req, res) => res.end('ok'));
const once = (options) => new Promise((done, fail) => {
  const t = process.hrtime.bigint();
  http.get({ ...options, agent: false }, (res) => { res.resume(); res.on('end', () => done(Number(process.hrtime.bigint() - t) / 1e6)); }).on('error', fail);
});
origin.listen({ host: '127.0.0.1', port: 0 }, async () => {
  const direct = { host: '127.0.0.1', port: origin.address().port, path: '/' };
  const proxied = { host: '127.0.0.1', port: 3128, path: 'http://api.bench/', headers: { host: 'api.bench' } };
  const times = { proxied: [], direct: [] };
  for (let i = 0; i < 10; i++) { await once(proxied); await once(direct); }
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) { times.proxied.push(await once(proxied)); times.direct.push(await once(direct)); }
    else { times.direct.push(await once(direct)); times.proxied.push(await once(proxied)); }
  }
  process.stdout.write(JSON.stringify(times));
  origin.close();
});
`;

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'egress-bench-'));
  const origin: Server = createServer((_req, res) => res.end('ok'));
  try {
    await new Promise<void>((resolve) => origin.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const originPort = (origin.address() as AddressInfo).port;
    const egressResolver = { resolve: () => Promise.resolve(['203.0.113.20']), route: () => ({ host: '127.0.0.1', port: originPort }) };
    const spawner = (await SandboxSpawner.create({ egressResolver }))._unsafeUnwrap();
    // The request row's baseline is an origin the plugin serves on its own loopback, which the launcher's Landlock
    // ruleset refuses to a plugin with a list (no bind, no connect but to the proxy): that row runs under bubblewrap.
    const requestSpawner = (await SandboxSpawner.create({ egressResolver, backend: 'bubblewrap' }))._unsafeUnwrap();
    const writeDir = join(dir, 'data');
    mkdirSync(writeDir, { recursive: true });
    const policy = { network: false, writeDir, hiddenPaths: [], pluginId: 'bench-egress' };

    const timer = (await requestSpawner.spawn({ executable: unverifiedCommand([process.execPath, '-e', REQUEST_TIMER, String(REQUESTS)], dir, nodeRuntimePaths()), env: {}, ...policy, egress: ['api.bench:80'] }))._unsafeUnwrap();
    let out = '';
    timer.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await timer.exited;
    const times = JSON.parse(out) as { proxied: number[]; direct: number[] };

    const spawnTrue = (egress: readonly string[]) => async () => {
      const p = (await spawner.spawn({ executable: unverifiedCommand(['/bin/true'], dir), env: {}, ...policy, egress }))._unsafeUnwrap();
      await p.exited;
    };
    const listed = spawnTrue(['api.bench:80']);
    const unlisted = spawnTrue([]);
    await listed();
    await unlisted();
    const withList: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < SPAWNS; i++) {
      if (i % 2 === 0) {
        withList.push(await timeMs(listed));
        without.push(await timeMs(unlisted));
      } else {
        without.push(await timeMs(unlisted));
        withList.push(await timeMs(listed));
      }
    }
    // Both sides of a pair are spawned within milliseconds: load that changes between pairs moves both alike.
    const pairs = withList.map((ms, i) => ms - without[i]!);
    return [
      result(
        {
          name: 'HTTP request through the egress proxy (host proxy, origin)',
          baselineName: 'direct request to a loopback origin',
          unit: 'ms',
          compare: 'difference',
          target: 1,
          better: 'lower',
          note: `p50 of ${REQUESTS} alternating requests each, timed inside one plugin sandboxed by bubblewrap (the launcher refuses the plugin its own loopback origin), a new connection per request (the worst case: every request pays the host's accept and the proxy's dial); ratio ${(median(times.proxied) / median(times.direct)).toFixed(2)}×; target ≤ +1 ms (issue 19)`,
        },
        times.proxied,
        times.direct,
      ),
      {
        ...result(
          {
            name: 'sandboxed spawn of /bin/true with a destination list',
            baselineName: 'sandboxed spawn without one',
            unit: 'ms',
            compare: 'difference',
            target: 3,
            better: 'lower',
            note: `${SPAWNS} adjacent pairs, alternating which side goes first, spawn until exit; the comparison is the median of the per-pair differences (quartiles ${percentile(pairs, 25).toFixed(1)} to ${percentile(pairs, 75).toFixed(1)} ms; the difference of the two medians: ${(median(withList) - median(without)).toFixed(1)} ms; 30 runs each and the difference of the medians before issue 18's last round); both sides under the host's backend (${spawner.backendName}); the list holds the plugin back until the host's listener is open in the sandbox's network namespace (the launcher's --report, the helper's setns, the socket passed to the host), and the launcher brings the namespace's loopback up (docs/performance.md "One spawn"); ratio ${(median(withList) / median(without)).toFixed(2)}×; target ≤ +3 ms (issue 19)`,
          },
          withList,
          without,
        ),
        pairedDifference: median(pairs),
      },
    ];
  } finally {
    origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
