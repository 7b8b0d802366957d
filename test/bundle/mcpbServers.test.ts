/**
 * Published MCP servers as MCP Bundles, unmodified, under the sandbox:
 * server-everything, server-memory and server-filesystem laid out by npm, packed with the
 * official MCPB CLI, installed through PluginHost and called. A sensitive
 * user_config value reaches the server from the secret store and appears
 * nowhere else: not in info, the inventory, the catalog files or the logs.
 */
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Result } from 'neverthrow';
import type { HostError } from '../../src/errors/HostError.js';
import type { Logger } from '../../src/ports/ports.js';
import { HostPool, jsonOf } from '../support/hostHarness.js';
import { bundleDirectory, installedVersion, npmLayout, packBundle } from '../support/mcpbBundles.js';

const SLOW = 600_000;
const SECRET = 'sk-bundle-7c1d9e-never-logged';
const pool = new HostPool();
const made: string[] = [];
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(made.map((path) => rm(path, { recursive: true, force: true }))));

/** The tool names a fixture manifest of this repository declares for the same server. */
async function toolsOf(fixture: string): Promise<{ name: string }[]> {
  const manifest = JSON.parse(await readFile(join('fixtures/plugins', fixture, 'manifest.json'), 'utf8')) as { advertised_tools: { name: string }[] };
  return manifest.advertised_tools.map(({ name }) => ({ name }));
}

async function pack(manifest: object, layout: string): Promise<string> {
  const dir = await bundleDirectory(manifest, layout);
  made.push(dir);
  const bundle = await packBundle(dir);
  made.push(join(bundle, '..'));
  return bundle;
}

/** The value of a result, or a failure that shows the host error. */
function must<T>(result: Result<T, HostError>): T {
  if (result.isErr()) expect.fail(`${result.error.code}: ${result.error.message} ${JSON.stringify(result.error.details ?? {})}`);
  return result.value;
}

/** Every record a logger was given, as text. */
function recordingLogger(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const record = (fields: Record<string, unknown>, message: string): void => void lines.push(`${message} ${JSON.stringify(fields)}`);
  return { logger: { debug: record, info: record, warn: record, error: record }, text: () => lines.join('\n') };
}

async function filesUnder(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const name of await readdir(dir)) if (name.endsWith('.json') || name.endsWith('.lock')) parts.push(await readFile(join(dir, name), 'utf8'));
  return parts.join('\n');
}

let everything: string;
let memory: string;
let filesystem: string;

beforeAll(async () => {
  const everythingName = '@modelcontextprotocol/server-everything';
  const memoryName = '@modelcontextprotocol/server-memory';
  const [everythingVersion, memoryVersion] = await Promise.all([installedVersion(everythingName), installedVersion(memoryName)]);
  const everythingEntry = `node_modules/${everythingName}/dist/index.js`;
  everything = await pack(
    {
      manifest_version: '0.3',
      name: 'everything',
      display_name: 'Everything',
      version: everythingVersion,
      description: 'The MCP reference server-everything, as published',
      author: { name: 'Model Context Protocol' },
      server: {
        type: 'node',
        entry_point: everythingEntry,
        mcp_config: {
          command: 'node',
          args: [`\${__dirname}/${everythingEntry}`, 'stdio'],
          env: { EVERYTHING_TOKEN: '${user_config.api_key}', GREETING: '${user_config.greeting}', BUNDLE_ROOT: '${__dirname}' },
        },
      },
      tools: await toolsOf('host-everything'),
      compatibility: { platforms: ['linux', 'darwin'], runtimes: { node: '>=18.0.0' } },
      user_config: {
        api_key: { type: 'string', title: 'Everything API key', description: 'The key the server is given', sensitive: true, required: true },
        greeting: { type: 'string', title: 'Greeting', description: 'Passed as GREETING', default: 'hello' },
      },
    },
    await npmLayout(everythingName, everythingVersion),
  );
  const memoryEntry = `node_modules/${memoryName}/dist/index.js`;
  memory = await pack(
    {
      manifest_version: '0.2',
      name: 'memory',
      version: memoryVersion,
      description: 'The MCP reference knowledge-graph memory server, as published',
      author: { name: 'Model Context Protocol' },
      server: {
        type: 'node',
        entry_point: memoryEntry,
        mcp_config: { command: 'node', args: [`\${__dirname}/${memoryEntry}`], env: { MEMORY_FILE_PATH: '${HOME}/${user_config.memory_file}' } },
      },
      tools: await toolsOf('host-memory'),
      user_config: { memory_file: { type: 'string', title: 'Memory file', description: 'File name in the data dir', default: 'memory.json' } },
    },
    await npmLayout(memoryName, memoryVersion),
  );
  const filesystemName = '@modelcontextprotocol/server-filesystem';
  const filesystemVersion = await installedVersion(filesystemName);
  const filesystemEntry = `node_modules/${filesystemName}/dist/index.js`;
  filesystem = await pack(
    {
      manifest_version: '0.3',
      name: 'filesystem',
      version: filesystemVersion,
      description: 'The MCP reference filesystem server, as published, serving its data dir',
      author: { name: 'Model Context Protocol' },
      server: { type: 'node', entry_point: filesystemEntry, mcp_config: { command: 'node', args: [`\${__dirname}/${filesystemEntry}`, '${HOME}'] } },
      tools: await toolsOf('host-filesystem'),
    },
    await npmLayout(filesystemName, filesystemVersion),
  );
}, SLOW);

describe('published servers as MCP Bundles, under the sandbox', () => {
  it('installs server-everything from its .mcpb, takes its sensitive key from the secret store, and never shows the key', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const log = recordingLogger();
    const installer = await pool.open(dir, { logger: log.logger });
    const installed = must(await installer.install(everything, { canary: false }));
    expect(installed.plugin).toMatchObject({
      name: 'everything',
      status: 'needs_configuration',
      credential_descriptors: [{ alias: 'api_key', kind: 'secret', display_name: 'Everything API key' }],
      granted_capabilities: { network: false, fs_write_dir: '', env_allow: [], basis: 'host_default', grant: null },
    });
    expect(installed.plugin.operations).toHaveLength((await toolsOf('host-everything')).length);
    await installer.close();

    const host = await pool.open(dir, { logger: log.logger });
    const setup = must(await host.setup('everything', { api_key: SECRET }));
    expect(setup).toMatchObject({ status: 'passed', stored: ['api_key'] });
    const root = must(await host.info('everything')).executable.install_root;
    // MCPB tools carry no annotations, so every bundle tool is a write.
    const env = jsonOf<Record<string, string>>(must(await host.call('plug.everything.get-env', {}, { maxRisk: 'destructive' })));
    expect(env).toMatchObject({ EVERYTHING_TOKEN: SECRET, GREETING: 'hello', BUNDLE_ROOT: root, HOME: join(dir, 'data', 'everything') });
    const echoed = must(await host.call('plug.everything.echo', { message: 'from a bundle' }, { maxRisk: 'destructive' }));
    expect(JSON.stringify(echoed.value)).toContain('from a bundle');

    const info = must(await host.info('everything'));
    expect(info.enforced_capabilities).toMatchObject({ enforced: true, network: false });
    const shown = [JSON.stringify(info), JSON.stringify(must(await host.list())), must(await host.resource('mcp-plugin-host://plugin/everything')).text];
    for (const text of [...shown, await filesUnder(dir), log.text()]) expect(text).not.toContain(SECRET);
  });

  it('installs server-memory from its .mcpb with a setting and keeps its graph in the data dir', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir);
    const installed = must(await installer.install(memory, { canary: false, settings: { memory_file: 'graph.json' } }));
    expect(installed.plugin.status).toBe('installed_pending_restart');
    await installer.close();
    const host = await pool.open(dir);
    const entities = [{ name: 'bundle', entityType: 'format', observations: ['a zip with manifest.json'] }];
    must(await host.call('plug.memory.create_entities', { entities }, { maxRisk: 'destructive' }));
    const graph = must(await host.call('plug.memory.read_graph', {}, { maxRisk: 'destructive' }));
    expect(JSON.stringify(graph.value)).toContain('a zip with manifest.json');
    expect(await readFile(join(dir, 'data', 'memory', 'graph.json'), 'utf8')).toContain('a zip with manifest.json');
  });

  it('installs server-filesystem from its .mcpb serving its data dir (${HOME} in its arguments), and nothing outside it', { timeout: SLOW }, async () => {
    const dir = await pool.profile();
    const host = await pool.open(dir, { activation: 'immediate' });
    must(await host.install(filesystem, { canary: false }));
    const dataDir = join(dir, 'data', 'filesystem');
    must(await host.call('plug.filesystem.write_file', { path: join(dataDir, 'note.txt'), content: 'from a bundle\n' }, { maxRisk: 'destructive' }));
    expect(await readFile(join(dataDir, 'note.txt'), 'utf8')).toBe('from a bundle\n');
    const outside = await host.call('plug.filesystem.read_text_file', { path: join(dir, 'plugins.lock') }, { maxRisk: 'destructive' });
    expect(JSON.stringify(outside.isOk() ? outside.value : outside.error)).toMatch(/denied|outside|not allowed/i);
  });
});
