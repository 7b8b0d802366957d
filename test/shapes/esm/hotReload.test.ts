import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnPluginProcess } from '../../../src/process/spawnPluginProcess.js';
import type { PluginProcess } from '../../../src/process/PluginProcess.js';
import { esmRunnerCommand } from '../../../src/shapes/esm/esmRunnerCommand.js';
import { EsmSession } from '../../../src/shapes/esm/EsmSession.js';
import type { EsmPlugin } from '../../../src/shapes/esm/EsmPlugin.js';
import { loadInProcess } from '../../../src/shapes/esm/loadPlugins.js';
import { prepareServerForPlugins } from '../../../src/shapes/esm/prepareServer.js';
import { parseRunnerReport } from '../../../src/shapes/esm/runnerDiagnostic.js';
import { watchPlugin, type EsmReloadEvent, type PluginWatcher } from '../../../src/shapes/esm/watchPlugin.js';
import { echoToolsSource, firstText, RUNNER_ARGV, serverWithClient, Workspace } from './helpers.js';

let ws: Workspace;
beforeAll(async () => {
  ws = await Workspace.create();
});
afterAll(async () => {
  await ws.remove();
});
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function loadedPlugin(name: string, options: { strictCapabilities?: boolean } = {}) {
  const root = await ws.plugin({ name, tools: ['hot'], source: echoToolsSource(['hot'], 'v1:') });
  const pair = serverWithClient();
  cleanups.push(pair.close);
  prepareServerForPlugins(pair.server);
  await pair.connect();
  const plugin = (await loadInProcess(pair.server, root, { trust: 'in-process', ...options }))._unsafeUnwrap();
  const call = async (tool = 'hot'): Promise<string | undefined> => firstText(await pair.client.callTool({ name: tool, arguments: { text: 'x' } }));
  return { root, plugin, call, ...pair };
}

/** Collects reload events and lets a test wait for the next one. */
function eventsOf(plugin: EsmPlugin): { next: () => Promise<EsmReloadEvent>; watcher: PluginWatcher } {
  const queue: EsmReloadEvent[] = [];
  const waiting: Array<(e: EsmReloadEvent) => void> = [];
  const watcher = watchPlugin(
    plugin,
    (event) => {
      const take = waiting.shift();
      if (take) take(event);
      else queue.push(event);
    },
    { debounceMs: 50 },
  );
  cleanups.push(() => watcher.close());
  return { watcher, next: () => new Promise((resolve) => (queue.length > 0 ? resolve(queue.shift()!) : waiting.push(resolve))) };
}

describe('EsmPlugin.reload', () => {
  it('re-registers a changed entry and tells clients the tool list changed', async () => {
    const { root, plugin, call, client } = await loadedPlugin('reload-good');
    let listChanged = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanged++;
    });
    expect(await call()).toBe('v1:x');
    await replaceFile(join(root, 'index.mjs'), echoToolsSource(['hot'], 'v2:'));
    const result = (await plugin.reload())._unsafeUnwrap();
    expect(result.counts).toEqual({ tools: 1, resources: 0, prompts: 0 });
    expect(await call()).toBe('v2:x');
    expect(listChanged).toBeGreaterThan(0);
  });

  it('keeps the last good version when the new entry does not load, and says why', async () => {
    const { root, plugin, call } = await loadedPlugin('reload-broken');
    await replaceFile(join(root, 'index.mjs'), 'export function createPlugin( {\n');
    const error = (await plugin.reload())._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENTRY_INVALID');
    expect(await call()).toBe('v1:x');
  });

  it('keeps the last good version when the new version fails strict capabilities', async () => {
    const { root, plugin, call, client } = await loadedPlugin('reload-strict', { strictCapabilities: true });
    await replaceFile(join(root, 'index.mjs'), echoToolsSource(['hot', 'extra'], 'v2:'));
    expect((await plugin.reload())._unsafeUnwrapErr().code).toBe('PLUGIN_CAPABILITY_MISMATCH');
    expect(await call()).toBe('v1:x');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['hot']);
  });

  it('picks up a manifest change that declares a new tool', async () => {
    const { root, plugin, call } = await loadedPlugin('reload-grow', { strictCapabilities: true });
    await ws.plugin({ name: 'reload-grow', tools: ['hot', 'second'], source: echoToolsSource(['hot', 'second'], 'v2:') });
    expect((await plugin.reload())._unsafeUnwrap().counts.tools).toBe(2);
    expect(await call('second')).toBe('v2:x');
    expect(root).toBe(join(ws.dir, 'reload-grow'));
  });

  it('refuses to reload after unload', async () => {
    const { plugin } = await loadedPlugin('reload-unloaded');
    plugin.unload();
    expect((await plugin.reload())._unsafeUnwrapErr().code).toBe('PLUGIN_NOT_FOUND');
  });
});

describe('watchPlugin', () => {
  it('reloads on a good change and keeps the last good version on a broken one', async () => {
    const { root, plugin, call } = await loadedPlugin('watched');
    const events = eventsOf(plugin);

    await replaceFile(join(root, 'index.mjs'), echoToolsSource(['hot'], 'v2:'));
    const good = await events.next();
    expect(good.ok).toBe(true);
    expect(await call()).toBe('v2:x');

    await replaceFile(join(root, 'index.mjs'), 'this is not javascript {{{\n');
    const broken = await events.next();
    expect(broken).toMatchObject({ ok: false, plugin: 'watched', runningVersion: '1.0.0' });
    expect(broken.ok === false && broken.error.code).toBe('PLUGIN_ENTRY_INVALID');
    expect(await call()).toBe('v2:x');

    await replaceFile(join(root, 'mcp-plugin.json'), '{ "name": ');
    const badManifest = await events.next();
    expect(badManifest.ok === false && badManifest.error.code).toBe('PLUGIN_MANIFEST_INVALID');
    expect(await call()).toBe('v2:x');
  });

  it('stops reloading once closed', async () => {
    const { root, plugin, call } = await loadedPlugin('unwatched');
    // The closed watcher has the shorter debounce, and reloads of one plugin run in order: were it still
    // watching, its reload would be queued first and its event delivered before the open watcher's.
    const closedEvents: EsmReloadEvent[] = [];
    const closedWatcher = watchPlugin(plugin, (event) => closedEvents.push(event), { debounceMs: 20 });
    cleanups.push(() => closedWatcher.close());
    const open = new Promise<EsmReloadEvent>((resolve) => {
      const watcher = watchPlugin(plugin, resolve, { debounceMs: 1_000 });
      cleanups.push(() => watcher.close());
    });
    closedWatcher.close();
    await replaceFile(join(root, 'index.mjs'), echoToolsSource(['hot'], 'v2:'));
    expect((await open).ok).toBe(true);
    expect(closedEvents).toEqual([]);
    expect(await call()).toBe('v2:x');
  });
});

describe('hot reload inside the runner', () => {
  it('reloads a changed plugin in the runner subprocess and the session sees the new version', async () => {
    const root = await ws.plugin({ name: 'runner-hot', tools: ['hot'], source: echoToolsSource(['hot'], 'v1:') });
    const reports: string[] = [];
    let proc: PluginProcess | undefined;
    const session = EsmSession.create({
      launch: () =>
        spawnPluginProcess({ executable: esmRunnerCommand(root, { runnerArgv: RUNNER_ARGV, watch: true })._unsafeUnwrap(), env: { PATH: process.env.PATH ?? '' } }).map((p) => {
          proc = p;
          p.onStderrLine((line) => {
            const report = parseRunnerReport(line);
            if (report !== undefined) reports.push(report.kind);
          });
          return p;
        }),
      startupTimeoutMs: 20_000,
    })._unsafeUnwrap();
    cleanups.push(async () => {
      await session.close();
      await proc?.stop({ stdinGraceMs: 500, termGraceMs: 500 });
    });
    expect(firstText((await session.callTool('hot', { text: 'x' }))._unsafeUnwrap().value)).toBe('v1:x');
    await replaceFile(join(root, 'index.mjs'), echoToolsSource(['hot'], 'v2:'));
    await until(() => reports.includes('reloaded'));
    expect(firstText((await session.callTool('hot', { text: 'x' }))._unsafeUnwrap().value)).toBe('v2:x');

    await replaceFile(join(root, 'index.mjs'), 'broken {{{\n');
    await until(() => reports.includes('reload-failed'));
    expect(firstText((await session.callTool('hot', { text: 'x' }))._unsafeUnwrap().value)).toBe('v2:x');
    expect(session.stats().launches).toBe(1);
  });
});

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

let replacements = 0;

/** Replaces a file atomically (write beside it, then rename), as editors and build tools do, so no reader sees it half written. */
async function replaceFile(path: string, content: string): Promise<void> {
  const temp = `${path}.${process.pid}.${++replacements}.tmp`;
  await writeFile(temp, content);
  await rename(temp, path);
}
