/**
 * A published server that connects while it starts installs without a
 * hand-written manifest when the install grants it the network: its one
 * introspection start gets exactly the granted network (never more), after
 * the install's consent to it. `mcp-remote` (as published on npm) proxies a
 * real MCP server on the SDK's Streamable HTTP server transport that the test
 * runs on loopback: the installed plugin lists the remote tools, and a call
 * through the host reaches that server. Without the grant the start stays
 * offline and fails with the offline hint, as before.
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EgressResolver } from '../../src/egress/EgressProxy.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packGreeterServer } from './npmPack.js';
import { startRemoteServer, type RemoteServer } from './remoteServer.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// The version whose offline failure docs/published-servers.md records; npm fetches it from the registry.
const MCP_REMOTE = 'mcp-remote@0.15.1';
// npm fetches it from the registry and it starts twice (introspection, call): give a loaded machine room.
const NPM_TIMEOUT = { timeout: 240_000 };

let remote: RemoteServer;
beforeAll(async () => {
  remote = await startRemoteServer();
});
afterAll(() => remote.close());

// remote.test stands for a public host: the proxy resolves it to a documentation address and dials the loopback remote server instead.
const resolver: EgressResolver = {
  resolve: (name) => Promise.resolve(name === 'remote.test' ? ['203.0.113.30'] : []),
  route: () => ({ host: '127.0.0.1', port: Number(new URL(remote.url).port) }),
};

describe('npm: a server that connects at start, installed with a network grant', NPM_TIMEOUT, () => {
  it('mcp-remote with --grant-network lists the remote tools at install, and a call through the host reaches the remote server', async () => {
    const dir = await pool.profile();
    const asked: TrustRequest[] = [];
    const installer = await pool.open(dir, { profileKind: 'standard' });
    const installed = await installer.install(`npm:${MCP_REMOTE}`, {
      canary: false,
      args: [remote.url],
      grant: { network: true },
      accept: (request) => {
        // Nothing of the package has run when the start with network is asked for.
        if (request.stage === 'introspection') expect(remote.requests()).toBe(0);
        asked.push(request);
        return true;
      },
    });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    // First the start with network, before any tool is known; then the install, with the tools its start listed.
    expect(asked.map((r) => [r.stage ?? 'install', r.capabilities.network, r.tools.map((t) => t.name)])).toEqual([
      ['introspection', true, []],
      ['install', true, ['remote_echo', 'remote_wipe']],
    ]);
    await installer.close();
    const requestsAtInstall = remote.requests();
    expect(requestsAtInstall).toBeGreaterThan(0);

    const host = await pool.open(dir, { profileKind: 'standard' });
    const info = (await host.info('mcp-remote'))._unsafeUnwrap();
    expect(info.risk).toMatch(/^needs_review:/);
    expect(info.enforced_capabilities?.network).toBe(true);
    expect(Object.fromEntries(info.operations.map((o) => [o.tool_name, o.risk_class]))).toEqual({ remote_echo: 'write', remote_wipe: 'destructive' });
    const called = await host.call('plug.mcp-remote.remote_echo', { text: 'through the host' }, { maxRisk: 'write' });
    expect(textOf(called._unsafeUnwrap())).toBe('remote says through the host');
    expect(remote.calls).toEqual([{ name: 'remote_echo', arguments: { text: 'through the host' } }]);
  });

  it('with a destination list granted, the start reaches that destination only, through the egress proxy, as the installed plugin does', async () => {
    const dir = await pool.profile();
    const sandbox = { egressResolver: resolver };
    const asked: TrustRequest[] = [];
    const installer = await pool.open(dir, { profileKind: 'standard', sandbox });
    const egressAtInstall: string[] = [];
    installer.events.on('egress', (event) => egressAtInstall.push(`${event.host}:${event.port} ${event.allowed ? 'allowed' : 'refused'}`));
    const before = remote.calls.length;
    // mcp-remote uses HTTPS_PROXY only with --enable-proxy; --allow-http lets it speak plain HTTP to a host that is not loopback.
    const args = ['http://remote.test/mcp', '--allow-http', '--enable-proxy'];
    const installed = await installer.install(`npm:${MCP_REMOTE}`, {
      canary: false,
      args,
      grant: { egress: ['remote.test:80'] },
      accept: (request) => {
        asked.push(request);
        return true;
      },
    });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect(asked.map((r) => [r.stage ?? 'install', r.capabilities.network, r.capabilities.egress])).toEqual([
      ['introspection', false, ['remote.test:80']],
      ['install', false, ['remote.test:80']],
    ]);
    // The introspection went out through the proxy, to the listed destination only.
    expect(egressAtInstall.length).toBeGreaterThan(0);
    expect(new Set(egressAtInstall)).toEqual(new Set(['remote.test:80 allowed']));
    await installer.close();

    const host = await pool.open(dir, { profileKind: 'standard', sandbox });
    expect((await host.info('mcp-remote'))._unsafeUnwrap().enforced_capabilities).toMatchObject({ network: false, egress: ['remote.test:80'] });
    const called = await host.call('plug.mcp-remote.remote_echo', { text: 'through the proxy' }, { maxRisk: 'write' });
    expect(textOf(called._unsafeUnwrap())).toBe('remote says through the proxy');
    expect(remote.calls.slice(before)).toEqual([{ name: 'remote_echo', arguments: { text: 'through the proxy' } }]);
  });

  it('an owner accepted with these powers is not asked again before a reinstall starts; a wider network is asked for', async () => {
    const scratch = await pool.profile();
    const tarball = await packGreeterServer(scratch, join(scratch, 'marker'));
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const asked: string[] = [];
    const install = async (grant: { network?: boolean; egress?: string[] }) => {
      const installed = await host.install(`npm:${tarball}`, {
        canary: false,
        grant,
        accept: (request) => {
          asked.push(`${request.stage ?? 'install'} ${request.capabilities.network ? 'network' : (request.capabilities.egress ?? []).join(',')}`);
          return true;
        },
      });
      expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    };
    await install({ egress: ['api.test:443'] });
    expect(asked.splice(0)).toEqual(['introspection api.test:443', 'install api.test:443']);
    await install({ egress: ['api.test:443'] });
    expect(asked.splice(0)).toEqual([]);
    await install({ network: true });
    expect(asked.splice(0)).toEqual(['introspection network', 'install network']);
  });

  it('wrap takes the network as an option: with it the generated manifest lists the remote tools; a malformed destination is refused before npm runs', async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const wrapped = await host.wrap(`npm:${MCP_REMOTE}`, { args: [remote.url], network: true });
    expect(wrapped.isOk(), JSON.stringify(wrapped.isErr() ? wrapped.error : null)).toBe(true);
    const manifest = JSON.parse(wrapped._unsafeUnwrap().manifestText) as { advertised_tools: { name: string }[]; declared_capabilities: { network: boolean } };
    expect(manifest.advertised_tools.map((t) => t.name)).toEqual(['remote_echo', 'remote_wipe']);
    // The generated manifest keeps the host default: the network is the install's grant, not the package's declaration.
    expect(manifest.declared_capabilities.network).toBe(false);
    const refused = (await host.wrap(`npm:${MCP_REMOTE}`, { args: [remote.url], egress: ['https://remote.test/'] }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_EGRESS_DESTINATION_INVALID');
  });

  it('a declined start with network runs nothing: PLUGIN_TRUST_DECLINED before the server was started', async () => {
    const before = remote.requests();
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const asked: TrustRequest[] = [];
    const error = (
      await host.install(`npm:${MCP_REMOTE}`, {
        canary: false,
        args: [remote.url],
        grant: { network: true },
        accept: (request) => {
          asked.push(request);
          return false;
        },
      })
    )._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_TRUST_DECLINED', details: { plugin_id: 'mcp-remote', namespace_owner: 'npm:mcp-remote', stage: 'introspection' } });
    expect(asked.map((r) => r.stage)).toEqual(['introspection']);
    expect(remote.requests()).toBe(before);
  });

  it('without a grant the start stays offline: it fails with the offline hint, never reaching the remote server', async () => {
    const before = remote.requests();
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${MCP_REMOTE}`, { canary: false, args: [remote.url] }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(error.hint).toMatch(/^Its stderr reads like a network failure: the introspection start has no network unless the install grants it/);
    expect(error.hint).toContain('--grant-network');
    expect(remote.requests()).toBe(before);
  });

  it('with the network granted and the remote server gone, the hint does not tell the user to grant the network', async () => {
    const gone = await startRemoteServer();
    await gone.close();
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${MCP_REMOTE}`, { canary: false, args: [gone.url], grant: { network: true } }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(error.hint).toMatch(/^Its stderr reads like a network failure, with the network the install grants/);
    expect(error.hint).toContain('the whole network the install grants');
    expect(error.hint).not.toMatch(/--grant-network|--grant-egress|no network/);
  });
});
