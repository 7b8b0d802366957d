/**
 * Published npm servers of the third round of docs/published-servers.md
 * ("Servers tried"), installed from the registry as their authors ship them
 * (`npm:<name>@<version>`, no manifest, the README's arguments and env) and
 * called under the host default sandbox: no network, only the data directory
 * writable. Each shows one shape the earlier rounds did not:
 *
 * - @mapbox/mcp-server: a vendor server whose offline tools (turf geometry)
 *   answer with no token and no network, beside tools that need its API;
 * - @translated/lara-mcp: a server that exits without its keys (granted env at
 *   introspection) and answers a failed API call as JSON-RPC -32600, which the
 *   host maps to PLUGIN_REQUEST_REJECTED: the sandbox hint must still say the
 *   network is missing;
 * - @agentdeskai/browser-tools-mcp: a server that listens on a local port for
 *   its browser connector; the sandbox refuses the listen and the hint must
 *   name the network grant;
 * - @twilio-alpha/mcp: credentials as one argument, 197 tools generated from
 *   OpenAPI documents, and a logger that writes JSON-RPC requests
 *   (`method: "log"`) on stdout, which the host must answer and survive.
 *
 * The versions are pinned: a newer release may change its tools.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

/** Installs `spec` from the registry into a new standard profile, then opens a fresh host on it (restart semantics). */
async function installNpm(spec: string, options: { args?: readonly string[]; env?: Record<string, string>; grantEnv?: readonly string[] } = {}) {
  const dir = await pool.profile();
  const hostEnv = { ...process.env, ...options.env };
  const installer = await pool.open(dir, { profileKind: 'standard', env: hostEnv });
  const installed = await installer.install(`npm:${spec}`, {
    canary: false,
    ...(options.args === undefined ? {} : { args: options.args }),
    ...(options.grantEnv === undefined ? {} : { grant: { env_allow: options.grantEnv } }),
  });
  await installer.close();
  if (installed.isErr()) throw installed.error;
  return { dir, host: await pool.open(dir, { profileKind: 'standard', env: hostEnv }), plugin: installed.value.plugin };
}

const OFFLINE_HINT = /^The plugin has no network in its sandbox .*--grant-network/;

// npm fetches a tree of hundreds of packages from the registry and each server starts twice (introspection, call): mapbox took
// 203 s at a load of 20 on 2 cores.
describe('published servers, third round', { timeout: 420_000 }, () => {
  it('@mapbox/mcp-server@0.14.0: an offline tool answers without a token; an API tool says the token is missing', async () => {
    const { host, plugin } = await installNpm('@mapbox/mcp-server@0.14.0');
    expect(plugin.name).toBe('mapbox-mcp-server');
    const risks = Object.fromEntries((await host.info(plugin.name))._unsafeUnwrap().operations.map((o) => [o.tool_name, o.risk_class]));
    // readOnlyHint with destructiveHint false: write until a person reviews it.
    expect(risks).toMatchObject({ distance_tool: 'write', search_and_geocode_tool: 'write' });
    const distance = await host.call(
      `plug.${plugin.name}.distance_tool`,
      { from: { longitude: 2.3522, latitude: 48.8566 }, to: { longitude: -0.1276, latitude: 51.5072 } },
      { maxRisk: 'write' },
    );
    expect(textOf(distance._unsafeUnwrap())).toMatch(/^Distance: 343\.5\d kilometers/);
    // Its outputSchema's structured answer is passed on as the server wrote it.
    expect(distance._unsafeUnwrap().value).toMatchObject({ structuredContent: { units: 'kilometers', distance: expect.closeTo(343.53, 1) } });
    const search = (await host.call(`plug.${plugin.name}.search_and_geocode_tool`, { q: 'Eiffel Tower' }, { maxRisk: 'write' }))._unsafeUnwrapErr();
    expect(search.code).toBe('PLUGIN_TOOL_ERROR');
    expect(search.message).toContain('MAPBOX_ACCESS_TOKEN');
  });

  it('@translated/lara-mcp@1.0.6: starts with its granted keys; a failed API call answered as -32600 gets the network hint', async () => {
    const keys = { LARA_ACCESS_KEY_ID: 'LARAFAKEKEYID00', LARA_ACCESS_KEY_SECRET: 'lara-fake-secret-000' };
    const { host, plugin } = await installNpm('@translated/lara-mcp@1.0.6', { env: keys, grantEnv: Object.keys(keys) });
    expect((await host.info(plugin.name))._unsafeUnwrap().operations.length).toBeGreaterThanOrEqual(20);
    const failed = (await host.call(`plug.${plugin.name}.list_languages`, {}, { maxRisk: 'write' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_REQUEST_REJECTED');
    expect(failed.message).toMatch(/api\.laratranslate\.com/);
    expect(failed.hint).toMatch(OFFLINE_HINT);
  });

  it('@agentdeskai/browser-tools-mcp@2.0.2: its connector port is refused by the sandbox and the hint names the network grant', async () => {
    const { host, plugin } = await installNpm('@agentdeskai/browser-tools-mcp@2.0.2');
    const failed = (await host.call(`plug.${plugin.name}.getConsoleLogs`, {}, { maxRisk: 'write' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_TOOL_ERROR');
    expect(failed.message).toMatch(/listen EACCES/);
    expect(failed.hint).toMatch(OFFLINE_HINT);
  });

  it('@twilio-alpha/mcp@0.7.0: credentials as an argument, 197 tools, JSON-RPC log requests on stdout answered and survived', async () => {
    const credentials = `AC${'0'.repeat(32)}/SK${'0'.repeat(32)}:fake-secret-000`;
    const { host, plugin } = await installNpm('@twilio-alpha/mcp@0.7.0', { args: [credentials] });
    expect(plugin.name).toBe('twilio-alpha-mcp');
    expect((await host.info(plugin.name))._unsafeUnwrap().operations).toHaveLength(197);
    // Its logger writes each line as a JSON-RPC request to the client (method "log"); the call still gets its own answer.
    for (let i = 0; i < 2; i++) {
      const failed = (await host.call(`plug.${plugin.name}.TwilioApiV2010--ListAccount`, {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
      expect(failed.code).toBe('PLUGIN_INTERNAL_ERROR');
      expect(failed.message).toContain('An error occurred while making the request');
    }
  });
});
