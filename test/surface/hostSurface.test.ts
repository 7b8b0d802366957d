/**
 * The MCP surface beyond tools through PluginHost, for real: the published
 * server-everything installed in a scratch profile and run in the sandbox
 * (resources, templates, prompts, completions, logging, subscriptions), the
 * mcp-faulty fixture for a tools list_changed that breaks the manifest, and
 * server-memory for a plugin without prompts.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { HostEventMap } from '../../src/events/HostEvents.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 120_000;
const ID = 'host-everything';
const pool = new HostPool();
const scratch: string[] = [];
afterEach(() => pool.cleanup());
afterAll(async () => {
  await removePackages();
  await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
});

describe('resources, prompts, completions and logging of server-everything through PluginHost', () => {
  it(
    'lists and reads resources and templates, gets prompts and completes their arguments',
    async () => {
      const host = await pool.installed(await pool.profile(), ['everything']);

      const templates = (await host.resourceTemplates(ID))._unsafeUnwrap();
      expect(templates.map((t) => t.uriTemplate)).toContain('demo://resource/dynamic/text/{resourceId}');
      const read = (await host.readResource(ID, 'demo://resource/dynamic/text/7'))._unsafeUnwrap();
      expect(read.contents[0]).toMatchObject({ uri: 'demo://resource/dynamic/text/7', mimeType: 'text/plain' });
      expect(JSON.stringify(read.contents[0])).toContain('7');
      expect((await host.resources(ID)).isOk()).toBe(true);

      const prompts = (await host.prompts(ID))._unsafeUnwrap();
      expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['simple-prompt', 'args-prompt', 'completable-prompt']));
      const simple = (await host.getPrompt(ID, 'simple-prompt'))._unsafeUnwrap();
      expect(simple.messages[0]?.role).toBe('user');
      const filled = (await host.getPrompt(ID, 'completable-prompt', { department: 'Sales', name: 'Eve' }))._unsafeUnwrap();
      expect(JSON.stringify(filled.messages)).toContain('Please promote Eve to the head of the Sales team.');

      const departments = (await host.complete(ID, { type: 'ref/prompt', name: 'completable-prompt' }, { argument: { name: 'department', value: 'S' } }))._unsafeUnwrap();
      expect(departments.values.sort()).toEqual(['Sales', 'Support']);
      const people = (
        await host.complete(ID, { type: 'ref/prompt', name: 'completable-prompt' }, { argument: { name: 'name', value: '' }, context: { arguments: { department: 'Engineering' } } })
      )._unsafeUnwrap();
      expect(people.values).toEqual(['Alice', 'Bob', 'Charlie']);

      // A URI the plugin does not serve is the plugin's own error, naming the plugin.
      const unknown = (await host.readResource(ID, 'demo://nowhere'))._unsafeUnwrapErr();
      expect(unknown.details.plugin_id).toBe(ID);

      // A tool that registers a resource at run time: the plugin's resources list_changed arrives as an event,
      // and the link in the tool's result reads as the plugin wrote it.
      const changes: HostEventMap['list_changed'][] = [];
      host.events.on('list_changed', (e) => changes.push(e));
      const gzipped = (await host.call(`plug.${ID}.gzip-file-as-resource`, { name: 'note.txt.gz', data: 'data:text/plain,hello%20host' }))._unsafeUnwrap();
      const link = (gzipped.value as CallToolResult).content.find((c) => c.type === 'resource_link');
      if (link?.type !== 'resource_link') throw new Error(`no resource link in ${JSON.stringify(gzipped.value)}`);
      await waitUntil(() => changes.some((c) => c.plugin_id === ID && c.list === 'resources'));
      expect((await host.resources(ID))._unsafeUnwrap().map((r) => r.uri)).toContain(link.uri);
      expect((await host.readResource(ID, link.uri))._unsafeUnwrap().contents[0]).toMatchObject({ uri: link.uri, blob: expect.any(String) });
    },
    TIMEOUT_MS,
  );

  it(
    'sets the log level, delivers log messages and resource updates as events with the plugin id',
    async () => {
      const host = await pool.installed(await pool.profile(), ['everything'], { idleTimeoutMs: 0 });
      const logs: HostEventMap['log'][] = [];
      const updates: HostEventMap['resource:updated'][] = [];
      host.events.on('log', (e) => logs.push(e));
      host.events.on('resource:updated', (e) => updates.push(e));

      expect((await host.setLogLevel(ID, 'info')).isOk()).toBe(true);
      const uri = 'demo://resource/dynamic/text/1';
      expect((await host.subscribeResource(ID, uri)).isOk()).toBe(true);
      // server-everything acknowledges a subscription with an info log message.
      await waitUntil(() => logs.some((l) => String(l.data).includes(`Subscribe Resource request for URI: ${uri}`)));
      expect(logs[0]).toMatchObject({ plugin_id: ID, level: 'info' });

      // Its toggle sends an update for every subscribed URI at once.
      expect((await host.call(`plug.${ID}.toggle-subscriber-updates`, {}, { maxRisk: 'write' })).isOk()).toBe(true);
      await waitUntil(() => updates.length > 0);
      expect(updates[0]).toEqual({ plugin_id: ID, uri });
      expect((await host.unsubscribeResource(ID, uri)).isOk()).toBe(true);

      // Above the info messages, the server drops them.
      expect((await host.setLogLevel(ID, 'error')).isOk()).toBe(true);
      const before = logs.length;
      expect((await host.subscribeResource(ID, 'demo://resource/dynamic/text/2')).isOk()).toBe(true);
      expect((await host.unsubscribeResource(ID, 'demo://resource/dynamic/text/2')).isOk()).toBe(true);
      expect(logs.length).toBe(before);

      expect((await host.setLogLevel(ID, 'loud' as never))._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    },
    TIMEOUT_MS,
  );

  it(
    'refuses what a plugin does not announce, and unknown plugins',
    async () => {
      const host = await pool.installed(await pool.profile(), ['memory']);
      expect((await host.prompts('host-memory'))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_METHOD_NOT_FOUND', details: { plugin_id: 'host-memory', capability: 'prompts' } });
      expect((await host.resources('nobody'))._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
    },
    TIMEOUT_MS,
  );
});

describe('list_changed through PluginHost', () => {
  it(
    'emits a tools list_changed event, and a tool the manifest does not declare is still refused',
    async () => {
      const pkg = await packageFixturePlugin(join(import.meta.dirname, '..', '..', 'fixtures', 'plugins', 'mcp-faulty'), { bundle: ['bin/mcp-faulty.mjs'] });
      scratch.push(pkg);
      const dir = await pool.profile();
      const installer = await pool.open(dir);
      (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const host = await pool.open(dir);
      const changes: HostEventMap['list_changed'][] = [];
      host.events.on('list_changed', (e) => changes.push(e));

      expect((await host.call('plug.mcp-faulty.change_tools', { action: 'add' }, { maxRisk: 'write' })).isOk()).toBe(true);
      await waitUntil(() => changes.length > 0);
      expect(changes[0]).toEqual({ plugin_id: 'mcp-faulty', list: 'tools', code: 'PLUGIN_TOOLS_MISMATCH' });
      expect((await host.call('plug.mcp-faulty.echo', { message: 'x' }))._unsafeUnwrapErr().code).toBe('PLUGIN_TOOLS_MISMATCH');
    },
    TIMEOUT_MS,
  );
});
