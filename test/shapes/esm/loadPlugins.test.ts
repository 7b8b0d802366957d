import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/ports/ports.js';
import { resolveEntry } from '../../../src/shapes/esm/entry.js';
import { loadPlugins, type EsmInProcessOptions, type EsmPluginSource } from '../../../src/shapes/esm/loadPlugins.js';
import { prepareServerForPlugins } from '../../../src/shapes/esm/prepareServer.js';
import { ESM_FIXTURES, firstText, serverWithClient, Workspace } from './helpers.js';

let ws: Workspace;
beforeAll(async () => {
  ws = await Workspace.create();
});
afterAll(async () => {
  await ws.remove();
});

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

const TRUST: EsmInProcessOptions = { trust: 'in-process' };

/** Loads into a fresh prepared server and connects a client to it. */
async function load(plugins: readonly EsmPluginSource[], options: Partial<EsmInProcessOptions> = {}) {
  const pair = serverWithClient();
  closers.push(pair.close);
  prepareServerForPlugins(pair.server);
  const report = (await loadPlugins(pair.server, plugins, { ...TRUST, ...options }))._unsafeUnwrap();
  await pair.connect();
  const toolNames = async (): Promise<string[]> => (await pair.client.listTools()).tools.map((t) => t.name).sort();
  return { ...pair, report, summary: report.summary, toolNames };
}

const failedCode = (summary: { failed: readonly { name: string; error: { code: string } }[] }, name: string): string | undefined =>
  summary.failed.find((f) => f.name === name)?.error.code;

describe('loadPlugins summary', () => {
  it('reports loaded plugins, timings and stats in the seed shape', async () => {
    const { summary, toolNames } = await load([ESM_FIXTURES.allCapabilities, ESM_FIXTURES.undeclared, ESM_FIXTURES.invalidTool]);
    expect(Object.keys(summary).sort()).toEqual(['failed', 'loaded', 'skipped', 'stats', 'timings']);
    expect(summary.loaded.map((p) => [p.name, p.version, p.tools, p.resources, p.prompts])).toEqual([
      ['all-capabilities', '1.0.0', 2, 1, 1],
      ['undeclared', '0.1.0', 2, 0, 0],
      ['invalid-tool', '0.1.0', 1, 0, 0],
    ]);
    expect(summary.skipped).toEqual([]);
    expect(summary.failed).toEqual([]);
    expect(Object.keys(summary.timings).sort()).toEqual(['importMs', 'reconcileMs', 'registerMs', 'totalMs', 'validationMs']);
    for (const ms of Object.values(summary.timings)) expect(ms).toBeGreaterThanOrEqual(0);
    expect(summary.timings.totalMs).toBeGreaterThanOrEqual(summary.timings.importMs);
    // undeclared: pong not declared, greet not registered; invalid-tool: "bad name!" undeclared, two tools skipped.
    expect(summary.stats).toEqual({ toolsRegistered: 5, resourcesRegistered: 1, promptsRegistered: 1, invalidTools: 2, warnings: 5 });
    expect(await toolNames()).toEqual(['add', 'echo', 'good', 'ping', 'pong']);
    const json = JSON.parse(JSON.stringify(summary)) as typeof summary;
    expect(json.stats).toEqual(summary.stats);
  });

  it('serializes a failure as its code, message and hint', async () => {
    const { summary } = await load([ESM_FIXTURES.noCreatePlugin]);
    const [failure] = JSON.parse(JSON.stringify(summary.failed)) as Array<{ name: string; error: Record<string, unknown> }>;
    expect(failure?.name).toBe('no-create-plugin');
    expect(failure?.error).toMatchObject({ code: 'PLUGIN_ENTRY_INVALID', retryable: false });
    expect(String(failure?.error['message'])).toContain('does not export createPlugin(server)');
  });
});

describe('capability reconciliation and tool validation', () => {
  it('warns about declared-but-missing and registered-but-undeclared capabilities', async () => {
    const { summary } = await load([ESM_FIXTURES.undeclared]);
    expect(summary.loaded[0]?.warnings).toEqual([
      'tool "pong" was registered but is not declared in capabilities.tools',
      'prompt "greet" is declared in capabilities.prompts but createPlugin did not register it',
    ]);
  });

  it('fails the load under strict capabilities, registering nothing', async () => {
    const { summary, toolNames } = await load([ESM_FIXTURES.undeclared], { strictCapabilities: true });
    expect(summary.loaded).toEqual([]);
    const error = summary.failed[0]?.error;
    expect(error?.code).toBe('PLUGIN_CAPABILITY_MISMATCH');
    expect(error?.details['mismatches']).toHaveLength(2);
    expect(await toolNames()).toEqual([]);
  });

  it('warns when a declared resource is registered at another URI template', async () => {
    const root = await ws.plugin({
      name: 'moved-docs',
      tools: [],
      source: [
        "import { ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';",
        'export function createPlugin(server) {',
        "  server.registerResource('docs', new ResourceTemplate('mcp://documents/{id}', { list: undefined }), {}, async (uri) => ({ contents: [{ uri: uri.href, text: 'x' }] }));",
        '}',
      ].join('\n'),
    });
    const manifestPath = join(root, 'mcp-plugin.json');
    const manifest = { name: 'moved-docs', version: '1.0.0', sdk: 'x', entry: 'index.mjs', capabilities: { resources: [{ name: 'docs', uriTemplate: 'mcp://docs/{id}' }] } };
    await writeFile(manifestPath, JSON.stringify(manifest));
    const { summary } = await load([root]);
    expect(summary.loaded[0]?.warnings).toEqual(['resource "docs" is declared at mcp://docs/{id} but registered at mcp://documents/{id}']);
  });

  it('skips invalid tools with warnings and counts them', async () => {
    const { summary, toolNames } = await load([ESM_FIXTURES.invalidTool]);
    expect(await toolNames()).toEqual(['good']);
    expect(summary.stats.invalidTools).toBe(2);
    const warnings = summary.loaded[0]?.warnings ?? [];
    expect(warnings.some((w) => w.startsWith('tool "bad name!" skipped as invalid: name "bad name!" must match'))).toBe(true);
    expect(warnings.some((w) => w.includes('description must be a non-empty string'))).toBe(true);
    expect(warnings.some((w) => w.startsWith('tool "bad_schema" skipped as invalid: inputSchema must be'))).toBe(true);
  });

  it('blocks the plugin under strict tools, registering nothing', async () => {
    const { summary, toolNames } = await load([ESM_FIXTURES.invalidTool], { strictTools: true });
    const error = summary.failed[0]?.error;
    expect(error?.code).toBe('PLUGIN_TOOL_INVALID');
    expect((error?.details['invalidTools'] as Array<{ name: string }>).map((t) => t.name)).toEqual(['bad name!', 'bad_schema']);
    expect(await toolNames()).toEqual([]);
  });

  it('registers nothing of a plugin whose createPlugin throws after registering', async () => {
    const root = await ws.plugin({
      name: 'half-done',
      tools: ['first'],
      source: [
        'export function createPlugin(server) {',
        "  server.registerTool('first', { description: 'd' }, async () => ({ content: [] }));",
        "  throw new Error('configuration missing');",
        '}',
      ].join('\n'),
    });
    const { summary, toolNames } = await load([root]);
    expect(summary.failed[0]?.error.code).toBe('PLUGIN_INTERNAL_ERROR');
    expect(summary.failed[0]?.error.message).toContain('configuration missing');
    expect(await toolNames()).toEqual([]);
  });

  it('fails a createPlugin that never finishes with PLUGIN_TIMEOUT', async () => {
    const root = await ws.plugin({ name: 'stuck', tools: [], source: 'export function createPlugin() { return new Promise(() => {}); }\n' });
    const { summary } = await load([root], { createTimeoutMs: 200 });
    expect(summary.failed[0]?.error.code).toBe('PLUGIN_TIMEOUT');
  });

  it('rolls a plugin back when the server refuses one of its names', async () => {
    const first = await ws.plugin({ name: 'holder', tools: ['shared'] });
    const second = await ws.plugin({ name: 'clasher', tools: ['own', 'shared'] });
    const { summary, toolNames } = await load([first, second]);
    expect(summary.loaded.map((p) => p.name)).toEqual(['holder']);
    expect(failedCode(summary, 'clasher')).toBe('PLUGIN_NAMESPACE_CONFLICT');
    expect(await toolNames()).toEqual(['shared']);
  });
});

describe('dependencies', () => {
  it('loads dependencies before their dependents', async () => {
    const app = await ws.plugin({ name: 'dep-app', dependencies: ['dep-lib'] });
    const lib = await ws.plugin({ name: 'dep-lib', dependencies: ['dep-base'] });
    const base = await ws.plugin({ name: 'dep-base' });
    const { summary } = await load([app, lib, base]);
    expect(summary.loaded.map((p) => p.name)).toEqual(['dep-base', 'dep-lib', 'dep-app']);
  });

  it('fails every member of a cycle with a diagnostic naming it, and loads the rest', async () => {
    const a = await ws.plugin({ name: 'cyc-a', dependencies: ['cyc-b'] });
    const b = await ws.plugin({ name: 'cyc-b', dependencies: ['cyc-a'] });
    const onTop = await ws.plugin({ name: 'cyc-top', dependencies: ['cyc-a'] });
    const free = await ws.plugin({ name: 'cyc-free' });
    const { summary } = await load([a, b, onTop, free]);
    expect(summary.loaded.map((p) => p.name)).toEqual(['cyc-free']);
    expect(failedCode(summary, 'cyc-a')).toBe('PLUGIN_DEPENDENCY_CYCLE');
    expect(failedCode(summary, 'cyc-b')).toBe('PLUGIN_DEPENDENCY_CYCLE');
    expect(summary.failed.find((f) => f.name === 'cyc-a')?.error.message).toContain('cyc-a -> cyc-b -> cyc-a');
    expect(failedCode(summary, 'cyc-top')).toBe('PLUGIN_DEPENDENCY_MISSING');
  });

  it('fails a plugin whose dependency is missing, naming the dependency', async () => {
    const root = await ws.plugin({ name: 'needs-ghost', dependencies: ['ghost-plugin'] });
    const { summary } = await load([root]);
    const error = summary.failed[0]?.error;
    expect(error?.code).toBe('PLUGIN_DEPENDENCY_MISSING');
    expect(error?.message).toContain('ghost-plugin');
    expect(error?.details).toMatchObject({ plugin: 'needs-ghost', dependency: 'ghost-plugin' });
  });

  it('fails a dependent when its dependency fails to load', async () => {
    const broken = await ws.plugin({ name: 'broken-lib', source: 'export const nothing = 1;\n' });
    const user = await ws.plugin({ name: 'lib-user', dependencies: ['broken-lib'] });
    const { summary } = await load([user, broken]);
    expect(failedCode(summary, 'broken-lib')).toBe('PLUGIN_ENTRY_INVALID');
    expect(failedCode(summary, 'lib-user')).toBe('PLUGIN_DEPENDENCY_MISSING');
  });

  it('counts a plugin loaded earlier on the same server as an available dependency, and skips loading it twice', async () => {
    const lib = await ws.plugin({ name: 'early-lib' });
    const app = await ws.plugin({ name: 'late-app', dependencies: ['early-lib'] });
    const pair = serverWithClient();
    closers.push(pair.close);
    (await loadPlugins(pair.server, [lib], TRUST))._unsafeUnwrap();
    const second = (await loadPlugins(pair.server, [app, lib], TRUST))._unsafeUnwrap().summary;
    expect(second.loaded.map((p) => p.name)).toEqual(['late-app']);
    expect(second.skipped).toEqual([expect.objectContaining({ name: 'early-lib', reason: 'already-loaded' })]);
  });
});

describe('entry resolution', () => {
  it('refuses a missing createPlugin export with PLUGIN_ENTRY_INVALID', async () => {
    const { summary } = await load([ESM_FIXTURES.noCreatePlugin]);
    expect(summary.failed[0]?.error.code).toBe('PLUGIN_ENTRY_INVALID');
  });

  it('refuses an entry that climbs out of the root with ../', async () => {
    const outside = join(ws.dir, 'outside.mjs');
    await writeFile(outside, 'export function createPlugin() {}\n');
    const root = await ws.plugin({ name: 'climber', entry: '../outside.mjs' });
    const { summary } = await load([root]);
    expect(summary.failed[0]?.error.code).toBe('PLUGIN_ENTRY_INVALID');
    expect((await resolveEntry(root, '../outside.mjs'))._unsafeUnwrapErr().code).toBe('PLUGIN_ENTRY_INVALID');
  });

  it('refuses an entry that is a link to a file outside the root', async () => {
    const outside = join(ws.dir, 'linked-outside.mjs');
    await writeFile(outside, 'export function createPlugin() {}\n');
    const root = join(ws.dir, 'linker');
    await mkdir(root);
    await writeFile(join(root, 'mcp-plugin.json'), JSON.stringify({ name: 'linker', version: '1.0.0', sdk: 'x', entry: 'index.mjs', capabilities: {} }));
    await symlink(outside, join(root, 'index.mjs'));
    const { summary } = await load([root]);
    const error = summary.failed[0]?.error;
    expect(error?.code).toBe('PLUGIN_ENTRY_INVALID');
    expect(error?.message).toContain('outside the plugin root');
  });

  it('refuses an entry under a linked directory that points outside the root', async () => {
    const elsewhere = join(ws.dir, 'elsewhere');
    await mkdir(elsewhere, { recursive: true });
    await writeFile(join(elsewhere, 'index.mjs'), 'export function createPlugin() {}\n');
    const root = join(ws.dir, 'dir-linker');
    await mkdir(root);
    await symlink(elsewhere, join(root, 'dist'), 'dir');
    expect((await resolveEntry(root, 'dist/index.mjs'))._unsafeUnwrapErr().message).toContain('outside the plugin root');
  });

  it('accepts a link that stays inside the root, and refuses non-module files', async () => {
    const root = await ws.plugin({ name: 'inner-link' });
    await symlink(join(root, 'index.mjs'), join(root, 'alias.mjs'));
    expect((await resolveEntry(root, 'alias.mjs'))._unsafeUnwrap().path).toBe(join(root, 'index.mjs'));
    await writeFile(join(root, 'entry.cjs'), 'module.exports = {};\n');
    expect((await resolveEntry(root, 'entry.cjs'))._unsafeUnwrapErr().code).toBe('PLUGIN_ENTRY_INVALID');
    expect((await resolveEntry(root, 'missing.mjs'))._unsafeUnwrapErr().code).toBe('PLUGIN_ENTRY_INVALID');
  });
});

describe('loader flags', () => {
  it('skips everything when the manifest loader is disabled', async () => {
    const { summary, toolNames } = await load([ESM_FIXTURES.allCapabilities], { manifestLoaderEnabled: false });
    expect(summary.skipped).toEqual([expect.objectContaining({ reason: 'loader-disabled', root: ESM_FIXTURES.allCapabilities })]);
    expect(summary.loaded).toEqual([]);
    expect(await toolNames()).toEqual([]);
  });

  it('requires a verified signature under requireSignatures', async () => {
    const { summary } = await load(
      [ESM_FIXTURES.allCapabilities, { root: ESM_FIXTURES.undeclared, signatureVerified: true }],
      { requireSignatures: true },
    );
    expect(failedCode(summary, 'all-capabilities')).toBe('PLUGIN_SIGNATURE_INVALID');
    expect(summary.loaded.map((p) => p.name)).toEqual(['undeclared']);
  });

  it('validates manifests against the schema at schemaPath', async () => {
    const schemaPath = join(ws.dir, 'strict-schema.json');
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      required: ['name', 'version', 'sdk', 'entry', 'capabilities', 'metadata'],
      properties: { metadata: { type: 'object', required: ['author'] } },
    };
    await writeFile(schemaPath, JSON.stringify(schema));
    const { summary } = await load([ESM_FIXTURES.allCapabilities, ESM_FIXTURES.undeclared], { schemaPath });
    expect(summary.loaded.map((p) => p.name)).toEqual(['all-capabilities']);
    expect(summary.failed[0]?.error.code).toBe('PLUGIN_MANIFEST_INVALID');
  });

  it('fails the whole call when schemaPath cannot be used', async () => {
    const pair = serverWithClient();
    closers.push(pair.close);
    const result = await loadPlugins(pair.server, [ESM_FIXTURES.allCapabilities], { ...TRUST, schemaPath: join(ws.dir, 'no-such-schema.json') });
    expect(result._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('logs loader steps only under debugRegistry, and warnings always', async () => {
    const records: Array<[string, string]> = [];
    const logger: Logger = {
      debug: (_f, m) => records.push(['debug', m]),
      info: (_f, m) => records.push(['info', m]),
      warn: (_f, m) => records.push(['warn', m]),
      error: (_f, m) => records.push(['error', m]),
    };
    await load([ESM_FIXTURES.undeclared], { logger });
    expect(records.filter(([level]) => level === 'debug')).toEqual([]);
    expect(records.filter(([level]) => level === 'warn')).toHaveLength(2);
    records.length = 0;
    await load([ESM_FIXTURES.undeclared], { logger, debugRegistry: true });
    expect(records.filter(([level]) => level === 'debug').map(([, m]) => m)).toEqual(['preflight', 'registered']);
  });
});

describe('registration only after preflight', () => {
  it('keeps the real server untouched while createPlugin runs', async () => {
    const root = await ws.plugin({
      name: 'observer',
      tools: ['seen'],
      source: [
        'export async function createPlugin(server) {',
        "  server.registerTool('seen', { description: 'd' }, async () => ({ content: [{ type: 'text', text: String(globalThis.__esmObserved) }] }));",
        '  globalThis.__esmObserved = server.isConnected();',
        '}',
      ].join('\n'),
    });
    const { server, client, connect } = serverWithClient();
    closers.push(async () => {
      await client.close();
      await server.close();
    });
    prepareServerForPlugins(server);
    await connect();
    (await loadPlugins(server, [root], TRUST))._unsafeUnwrap();
    // The host server is connected; the plugin saw the capture server, which never is.
    expect(server.isConnected()).toBe(true);
    expect(firstText(await client.callTool({ name: 'seen', arguments: {} }))).toBe('false');
  });
});
