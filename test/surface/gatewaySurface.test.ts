/**
 * Resources, templates, prompts, completions, subscriptions and list_changed
 * through `mcp-plugin-host serve` over stdio (the CLI from source, a real
 * subprocess), with the SDK's own Client: server-everything installed twice
 * under two plugin ids, so every URI template and prompt name collides.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  LoggingMessageNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { waitUntil } from '../support/eventually.js';
import { GatewayPool, requestErrorCode as codeOf } from '../support/gatewayHarness.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 180_000;
const TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';

const pool = new HostPool();
const clients = new GatewayPool();
const scratch: string[] = [];
afterEach(async () => {
  await clients.cleanup();
  await pool.cleanup();
});
afterAll(async () => {
  await removePackages();
  await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
});

/** server-everything packaged again under another plugin id. */
async function twinEverything(): Promise<string> {
  const dir = await packageFixturePlugin(join(REPO, 'fixtures/plugins/host-everything'), { bundle: ['bin/everything.mjs'] });
  scratch.push(dir);
  const manifest = join(dir, 'manifest.json');
  await writeFile(manifest, JSON.stringify({ ...(JSON.parse(await readFile(manifest, 'utf8')) as object), plugin_id: 'twin-everything' }));
  return dir;
}

async function serve(dir: string, ...flags: string[]): Promise<Client> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const client = new Client({ name: 'surface-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', CLI_SOURCE, 'serve', '--profile-dir', dir, '--dev', ...flags], cwd: REPO, env, stderr: 'pipe' }),
  );
  clients.keep(client);
  return client;
}

describe('the MCP surface through the gateway over stdio', () => {
  it(
    "refuses a URI that one plugin lists and another plugin's template matches, rather than handing it to the lister",
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      const shadow = await packageFixturePlugin(join(REPO, 'fixtures/plugins/host-shadow'), { bundle: ['bin/shadow.mjs'] });
      scratch.push(shadow);
      for (const source of [await packaged('everything'), shadow]) (await installer.install(source, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const client = await serve(dir, '--max-risk', 'write');

      // A client that read demo://resource/dynamic/text/3 from server-everything's template must not get the shadow's answer.
      expect(await codeOf(client.readResource({ uri: 'demo://resource/dynamic/text/3' }))).toBe('GATEWAY_ITEM_NOT_FOUND');
      expect(await codeOf(client.subscribeResource({ uri: 'demo://resource/dynamic/text/3' }))).toBe('GATEWAY_ITEM_NOT_FOUND');
      const own = await client.readResource({ uri: 'plug.host-shadow:demo://resource/dynamic/text/3' });
      expect(own.contents[0]).toMatchObject({ text: 'from the shadow' });
      const everything = await client.readResource({ uri: 'plug.host-everything:demo://resource/dynamic/text/3' });
      expect(JSON.stringify(everything.contents)).not.toContain('from the shadow');
    },
    TIMEOUT_MS,
  );

  it(
    'serves resources, templates, prompts and completions of two plugins whose names collide, and forwards resource updates',
    async () => {
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      for (const source of [await packaged('everything'), await twinEverything()]) (await installer.install(source, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const client = await serve(dir, '--max-risk', 'write');

      expect(client.getServerCapabilities()).toMatchObject({ resources: { subscribe: true, listChanged: true }, prompts: { listChanged: true }, completions: {} });

      // Both list the same template: it is offered once per plugin, qualified.
      const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      expect(templates).toEqual(expect.arrayContaining([`plug.host-everything:${TEMPLATE}`, `plug.twin-everything:${TEMPLATE}`]));
      expect(templates).not.toContain(TEMPLATE);
      const read = await client.readResource({ uri: 'plug.twin-everything:demo://resource/dynamic/text/3' });
      expect(read.contents[0]).toMatchObject({ uri: 'plug.twin-everything:demo://resource/dynamic/text/3', mimeType: 'text/plain' });
      // Unqualified, the URI matches both plugins' templates: refused, naming the qualified forms.
      expect(await codeOf(client.readResource({ uri: 'demo://resource/dynamic/text/3' }))).toBe('GATEWAY_ITEM_NOT_FOUND');
      expect(await codeOf(client.readResource({ uri: 'plug.nobody:demo://x' }))).toBe('GATEWAY_ITEM_NOT_FOUND');

      // Prompts are named like op ids.
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      expect(prompts).toEqual(expect.arrayContaining(['plug.host-everything.simple-prompt', 'plug.twin-everything.simple-prompt', 'plug.host-everything.completable-prompt']));
      const prompt = await client.getPrompt({ name: 'plug.host-everything.completable-prompt', arguments: { department: 'Support', name: 'Kim' } });
      expect(JSON.stringify(prompt.messages)).toContain('Please promote Kim to the head of the Support team.');
      expect(await codeOf(client.getPrompt({ name: 'simple-prompt' }))).toBe('GATEWAY_ITEM_NOT_FOUND');

      const completion = await client.complete({ ref: { type: 'ref/prompt', name: 'plug.twin-everything.completable-prompt' }, argument: { name: 'department', value: 'Ma' } });
      expect(completion.completion.values).toEqual(['Marketing']);

      // A resource one plugin registers at run time: list_changed reaches the client, and the link in the tool's
      // result, listed by that plugin only, reads under the plugin's own URI.
      let resourceChanges = 0;
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void (resourceChanges += 1));
      const gzipped = (await client.callTool({ name: 'plug.twin-everything.gzip-file-as-resource', arguments: { name: 'twin.txt.gz', data: 'data:text/plain,hi' } })) as CallToolResult;
      const link = gzipped.content.find((c) => c.type === 'resource_link');
      if (link?.type !== 'resource_link') throw new Error(`no resource link in ${JSON.stringify(gzipped)}`);
      await waitUntil(() => resourceChanges > 0, 30_000);
      expect((await client.listResources()).resources.map((r) => r.uri)).toContain(link.uri);
      expect((await client.readResource({ uri: link.uri })).contents[0]).toMatchObject({ uri: link.uri, blob: expect.any(String) });

      // A subscription reaches the plugin, and its update reaches the client under the URI it subscribed with.
      // Plugins' log messages reach the client at the level it set, under the plugin's op id prefix.
      const logs: LoggingMessageNotification['params'][] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
      await client.setLoggingLevel('info');
      const updates: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
      const uri = 'plug.host-everything:demo://resource/dynamic/text/1';
      await client.subscribeResource({ uri });
      await client.callTool({ name: 'plug.host-everything.toggle-subscriber-updates', arguments: {} });
      await waitUntil(() => updates.length > 0, 30_000);
      expect(updates[0]).toBe(uri);
      // server-everything acknowledges a subscription with an info message.
      expect(logs).toContainEqual(expect.objectContaining({ logger: 'plug.host-everything', level: 'info', data: expect.stringContaining('Subscribe Resource request') }));
      await client.setLoggingLevel('error');
      const before = logs.length;
      await client.unsubscribeResource({ uri });
      await client.subscribeResource({ uri });
      await client.callTool({ name: 'plug.host-everything.echo', arguments: { message: 'after the info messages' } });
      expect(logs.length).toBe(before);
    },
    TIMEOUT_MS,
  );

  it(
    "forwards a plugin's tools list_changed to the client",
    async () => {
      const pkg = await packageFixturePlugin(join(REPO, 'fixtures/plugins/mcp-faulty'), { bundle: ['bin/mcp-faulty.mjs'] });
      scratch.push(pkg);
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const client = await serve(dir, '--max-risk', 'write');
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changes += 1));
      await client.callTool({ name: 'plug.mcp-faulty.change_tools', arguments: { action: 'add' } });
      await waitUntil(() => changes > 0, 30_000);
    },
    TIMEOUT_MS,
  );
});
