/** Shared pieces of the PluginHost tests: a fake clock, packaged fixtures, temp profiles, hosts that close themselves. */
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Result } from 'neverthrow';
import { expect } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { HostError } from '../../src/errors/HostError.js';
import type { HostEventMap, HostEventName } from '../../src/events/HostEvents.js';
import { PluginHost, type PluginHostOptions } from '../../src/host/PluginHost.js';
import type { ToolResult } from '../../src/shapes/PluginSession.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export { FakeClock } from './clocks.js';

/** The fixture plugins PluginHost tests install, with the Node entries packagePlugin bundles. */
export const FIXTURES = {
  probe: { dir: 'host-probe', bundle: ['bin/probe.mjs'] },
  egress: { dir: 'host-egress', bundle: ['bin/egress.mjs'] },
  canary: { dir: 'host-canary', bundle: ['bin/canary.mjs'] },
  ndjson: { dir: 'host-ndjson', bundle: ['bin/echo.mjs'] },
  handshake: { dir: 'host-handshake', bundle: ['bin/plugin.mjs'] },
  everything: { dir: 'host-everything', bundle: ['bin/everything.mjs'] },
  filesystem: { dir: 'host-filesystem', bundle: ['bin/filesystem.mjs'] },
  memory: { dir: 'host-memory', bundle: ['bin/memory.mjs'] },
  published: { dir: 'host-published', bundle: ['bin/server.mjs'] },
  helloPython: { dir: 'hello-python', bundle: [] },
  surface: { dir: 'host-surface', bundle: ['bin/surface.mjs'] },
  deep: { dir: 'host-deep', bundle: [] },
} as const;

/** Names of {@link FIXTURES}. */
export type FixtureName = keyof typeof FIXTURES;

const packages = new Map<FixtureName, Promise<string>>();

/** The installable package of a fixture, built once per test file. */
export function packaged(name: FixtureName): Promise<string> {
  let pkg = packages.get(name);
  if (pkg === undefined) {
    const fixture = FIXTURES[name];
    pkg = packageFixturePlugin(join(root, 'fixtures/plugins', fixture.dir), { bundle: fixture.bundle });
    packages.set(name, pkg);
  }
  return pkg;
}

/**
 * The package of a fixture with another version in its manifest: an
 * upgrade (installing the same package again would change nothing).
 */
export async function packagedVersion(name: FixtureName, version: string): Promise<string> {
  const fixture = FIXTURES[name];
  const dir = await packageFixturePlugin(join(root, 'fixtures/plugins', fixture.dir), { bundle: fixture.bundle });
  const manifest = join(dir, 'manifest.json');
  await writeFile(manifest, JSON.stringify({ ...(JSON.parse(await readFile(manifest, 'utf8')) as object), version }));
  versioned.push(dir);
  return dir;
}
const versioned: string[] = [];

/** Removes every package built by {@link packaged}. */
export async function removePackages(): Promise<void> {
  const dirs = [...(await Promise.all(packages.values())), ...versioned.splice(0)];
  packages.clear();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
}

/** A fresh profile directory (real path, so it matches what plugins report). */
export async function tempProfile(): Promise<string> {
  return realpath(await mkdtemp(join(tmpdir(), 'host-test-')));
}

/** Opens hosts for a test and closes them (and removes their profiles) afterwards. */
export class HostPool {
  readonly #hosts: PluginHost[] = [];
  readonly #dirs: string[] = [];

  /** A new temp profile directory, removed by {@link HostPool.cleanup}. */
  async profile(): Promise<string> {
    const dir = await tempProfile();
    this.#dirs.push(dir);
    return dir;
  }

  /** Opens a dev-profile host on `profileDir` (python3 resolved outside pyenv shims). */
  async open(profileDir: string, options: PluginHostOptions = {}): Promise<PluginHost> {
    const opened = await PluginHost.open({ profileDir, profileKind: 'dev', interpreterSearchPath: '/usr/bin:/bin', ...options });
    if (opened.isErr()) throw opened.error;
    this.#hosts.push(opened.value);
    return opened.value;
  }

  /** Installs fixtures with a host that is closed afterwards, so that a host opened next finds them active. */
  async install(profileDir: string, names: readonly FixtureName[], options: PluginHostOptions = {}): Promise<void> {
    const installer = await this.open(profileDir, options);
    for (const name of names) {
      const result = await installer.install(await packaged(name), { canary: false });
      if (result.isErr()) throw result.error;
    }
    await installer.close();
  }

  /** Installs fixtures as {@link HostPool.install} does and returns a host opened afterwards (the plugins are active). */
  async installed(profileDir: string, names: readonly FixtureName[], options: PluginHostOptions = {}): Promise<PluginHost> {
    await this.install(profileDir, names, options);
    return this.open(profileDir, options);
  }

  /** Closes every host and removes every profile. */
  async cleanup(): Promise<void> {
    await Promise.all(this.#hosts.splice(0).map((h) => h.close()));
    await Promise.all(this.#dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  }
}

/** The value of a result that must have succeeded, or a test failure naming its error. */
export function answered<T>(result: Result<T, HostError>): T {
  if (result.isErr()) expect.fail(`${result.error.code}: ${result.error.message} (hint: ${result.error.hint})`);
  return result.value;
}

/** The next `event` of `host`, once it happens. */
export function nextEvent<E extends HostEventName>(host: PluginHost, event: E): Promise<HostEventMap[E]> {
  return new Promise((resolve) => {
    const off = host.events.on(event, (payload) => {
      off();
      resolve(payload);
    });
  });
}

/**
 * Starts a call of the probe fixture's echo that answers after `delayMs`,
 * and resolves once `host` emits `seen` (`spawn` when the call starts the
 * plugin, `call:start` once it is sent to a running one). The call comes
 * back inside an object: a ResultAsync is a thenable, which an async
 * function would await.
 */
export async function probeEchoInFlight(host: PluginHost, delayMs: number, seen: 'spawn' | 'call:start') {
  const happened = nextEvent(host, seen);
  const call = host.call('plug.host-probe.echo', { message: 'in flight', delayMs });
  await happened;
  return { call };
}

/** The JSON payload of an MCP tool result whose first content block is JSON text. */
export function jsonOf<T = Record<string, unknown>>(result: ToolResult): T {
  const value = result.value as { content?: { type: string; text?: string }[] };
  const text = value.content?.[0]?.text;
  if (text === undefined) throw new Error(`no text content in ${JSON.stringify(result.value)}`);
  return JSON.parse(text) as T;
}

/** The text of an MCP tool result's first content block. */
export function textOf(result: ToolResult): string {
  const value = result.value as { content?: { type: string; text?: string }[] };
  const text = value.content?.[0]?.text;
  if (text === undefined) throw new Error(`no text content in ${JSON.stringify(result.value)}`);
  return text;
}
