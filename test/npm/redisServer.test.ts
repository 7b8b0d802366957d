/**
 * @modelcontextprotocol/server-redis (as published on npm) connects to its
 * redis at start and never answers `initialize` without it. With the network
 * granted, its introspection start gets the network too and lists its tools
 * against a real redis-server (Debian's, started here on a loopback port);
 * a call through the host writes a key that redis-cli then reads. Without
 * the grant the start stays offline and fails with the offline hint.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const SERVER_REDIS = '@modelcontextprotocol/server-redis@2025.4.25';
// npm fetches it from the registry and it starts twice (introspection, call): give a loaded machine room.
const NPM_TIMEOUT = { timeout: 240_000 };

let redis: ChildProcess;
let port = 0;
let workDir = '';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port: free } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return free;
}

const cli = (...args: string[]): string => execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' }).trim();

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'redis-test-'));
  port = await freePort();
  // Debian's redis-server (apt-get install redis-server; .ci/run installs it): in memory only, loopback only.
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', workDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  let said = '';
  redis.stdout?.on('data', (chunk: Buffer) => (said += chunk.toString()));
  const exited = once(redis, 'exit').then(() => {
    throw new Error(`redis-server exited: ${said}`);
  });
  const ready = (async () => {
    while (!said.includes('Ready to accept connections')) await new Promise((resolve) => setTimeout(resolve, 50));
  })();
  await Promise.race([ready, exited]);
});

afterAll(async () => {
  if (redis.exitCode === null) {
    redis.kill('SIGTERM');
    await once(redis, 'exit');
  }
  await rm(workDir, { recursive: true, force: true });
});

describe('npm: server-redis, which connects to its redis at start', NPM_TIMEOUT, () => {
  it('installs with --grant-network against a real redis-server, and its set tool writes the key', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir, { profileKind: 'standard' });
    const installed = await installer.install(`npm:${SERVER_REDIS}`, { canary: false, args: [`redis://127.0.0.1:${port}`], grant: { network: true } });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    await installer.close();

    const host = await pool.open(dir, { profileKind: 'standard' });
    const info = (await host.info('server-redis'))._unsafeUnwrap();
    expect(info.operations.map((o) => o.tool_name).sort()).toEqual(['delete', 'get', 'list', 'set']);
    const set = await host.call('plug.server-redis.set', { key: 'mcp-plugin-host', value: 'granted network' }, { maxRisk: 'destructive' });
    expect(textOf(set._unsafeUnwrap())).toContain('mcp-plugin-host');
    expect(cli('GET', 'mcp-plugin-host')).toBe('granted network');
  });

  it('without the grant the start stays offline and fails with the offline hint', async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${SERVER_REDIS}`, { canary: false, args: [`redis://127.0.0.1:${port}`] }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(error.hint).toMatch(/^Its stderr reads like a network failure: the introspection start has no network unless the install grants it/);
  });
});
