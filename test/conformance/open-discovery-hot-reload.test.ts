/**
 * Seed 003 "End-to-End Install 4" ("Hot-reload watches entry + manifest; on
 * change: revalidate → reconcile → re-register") and "Dynamic Operations"
 * ("Hot reload manager re-invokes loader and replays registrations"), for
 * plugins installed through PluginHost: a host opened with `hotReload`
 * follows the installs, upgrades and removes another PluginHost publishes on
 * the same profile. Real probe plugin subprocesses in the sandbox, and the
 * gateway's MCP client over Streamable HTTP.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';
import { answered, jsonOf, nextEvent, packaged, packagedVersion, probeEchoInFlight } from '../support/hostHarness.js';

const ECHO = 'plug.host-probe.echo';
const HOT = { hotReload: { pollMs: 20 } } as const;
const TOKEN = 'hot-reload-token-0123456789abcdef';

const { pool, gateways } = gatewayTestPools();

describe('seed 003 hot reload of installed plugins (PluginHostOptions.hotReload), two hosts on one profile', () => {
  it('seed 003 End-to-End Install 4: a plugin another process installs is callable without reopening (catalog:changed installed); a host without hotReload keeps the restart semantics', async () => {
    const dir = await pool.profile();
    const watching = await pool.open(dir, HOT);
    const plain = await pool.open(dir);
    const installer = await pool.open(dir);
    const changed = nextEvent(watching, 'catalog:changed');
    answered(await installer.install(await packaged('probe'), { canary: false }));
    expect(await changed).toMatchObject({ installed: ['host-probe'], removed: [], upgraded: [] });
    expect(jsonOf(answered(await watching.call(ECHO, { message: 'hi' })))).toMatchObject({ success: true, data: { args: { message: 'hi' } } });
    expect(answered(await watching.list())).toContainEqual(expect.objectContaining({ name: 'host-probe', status: 'active' }));

    answered(await plain.list());
    expect((await plain.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('PLUGIN_PENDING_RESTART');
  });

  it('seed 003 Dynamic Operations: an upgrade by another process lets the call in flight finish on the old process, and a call made meanwhile starts the new version', async () => {
    const dir = await pool.profile();
    const watching = await pool.installed(dir, ['probe'], HOT);
    const other = await pool.open(dir);
    const firstSpawn = nextEvent(watching, 'spawn');
    answered(await watching.call(ECHO, {}));
    const oldPid = (await firstSpawn).pid;

    const { call } = await probeEchoInFlight(watching, 800, 'call:start');
    const changed = nextEvent(watching, 'catalog:changed');
    const exited = nextEvent(watching, 'exit');
    answered(await other.install(await packagedVersion('probe', '1.1.0'), { canary: false }));
    expect(await changed).toMatchObject({ installed: [], removed: [], upgraded: ['host-probe'] });
    // A call made while the old process drains is not refused: it starts the new version.
    const newSpawn = nextEvent(watching, 'spawn');
    expect(jsonOf(answered(await watching.call(ECHO, { message: 'meanwhile' })))).toMatchObject({ success: true, data: { args: { message: 'meanwhile' } } });
    expect((await newSpawn).pid).not.toBe(oldPid);
    expect(jsonOf(answered(await call))).toMatchObject({ success: true, data: { args: { message: 'in flight' } } });
    expect((await exited).pid).toBe(oldPid);
    expect(answered(await watching.info('host-probe')).version).toBe('1.1.0');
  });

  it('seed 003 Dynamic Operations: a call made after the snapshot moved to an upgrade, before the watch retired the old process, runs the new version', async () => {
    const dir = await pool.profile();
    // The watch never polls here: only list() moves the snapshot, as a refresh does between a poll and its retirement.
    const watching = await pool.installed(dir, ['probe'], { hotReload: { pollMs: 3_600_000 } });
    const other = await pool.open(dir);
    const firstSpawn = nextEvent(watching, 'spawn');
    answered(await watching.call(ECHO, {}));
    const oldPid = (await firstSpawn).pid;
    answered(await other.install(await packagedVersion('probe', '1.1.0'), { canary: false }));
    answered(await watching.list());
    const newSpawn = nextEvent(watching, 'spawn');
    const exited = nextEvent(watching, 'exit');
    expect(jsonOf(answered(await watching.call(ECHO, { message: 'after' })))).toMatchObject({ success: true, data: { args: { message: 'after' } } });
    expect((await newSpawn).pid).not.toBe(oldPid);
    expect((await exited).pid).toBe(oldPid);
  });

  it('seed 003 Dynamic Operations: a remove by another process lets the call in flight finish, stops the old process, and the operation is gone', async () => {
    const dir = await pool.profile();
    const watching = await pool.installed(dir, ['probe'], HOT);
    const other = await pool.open(dir);
    const spawned = nextEvent(watching, 'spawn');
    answered(await watching.call(ECHO, {}));
    const pid = (await spawned).pid;

    const { call } = await probeEchoInFlight(watching, 800, 'call:start');
    const changed = nextEvent(watching, 'catalog:changed');
    const exited = nextEvent(watching, 'exit');
    answered(await other.remove('host-probe'));
    expect(await changed).toMatchObject({ installed: [], removed: ['host-probe'], upgraded: [] });
    expect(jsonOf(answered(await call))).toMatchObject({ success: true });
    expect((await exited).pid).toBe(pid);
    expect((await watching.call(ECHO, {}))._unsafeUnwrapErr().code).toBe('VARIANT_NOT_FOUND');
  });

  it('seed 003 "Send list changed events": a gateway on a hotReload host tells its clients tools/list_changed when another process installs a plugin', async () => {
    const dir = await pool.profile();
    const watching = await pool.open(dir, HOT);
    // No gateway catalog poll during the test: the host's catalog:changed event alone must reach the client.
    const served = await gateways.serve(watching, { catalogPollMs: 3_600_000, http: { token: TOKEN, port: 0 } });
    const { client } = await gateways.connectHttp(served.url ?? '', TOKEN, 'hot-reload-test');
    const told = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain(ECHO);

    answered(await (await pool.open(dir)).install(await packaged('probe'), { canary: false }));
    await told;
    expect((await client.listTools()).tools.map((t) => t.name)).toContain(ECHO);
  });

  it('seed 003 hot reload for `mcp-plugin-host serve --hot-reload`: the gateway subprocess serves a plugin another process installs, without a restart', async () => {
    const dir = await pool.profile();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    const client = new Client({ name: 'hot-reload-cli', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', CLI_SOURCE, 'serve', '--profile-dir', dir, '--dev', '--hot-reload'], cwd: REPO, env, stderr: 'pipe' }),
    );
    gateways.keep(client);
    const told = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    expect((await client.listTools()).tools).toEqual([]);

    answered(await (await pool.open(dir)).install(await packaged('probe'), { canary: false }));
    await told;
    expect((await client.listTools()).tools.map((t) => t.name)).toContain(ECHO);
    const echoed = (await client.callTool({ name: ECHO, arguments: { message: 'served' } })) as CallToolResult;
    expect(echoed.isError).not.toBe(true);
  }, 120_000);
});
