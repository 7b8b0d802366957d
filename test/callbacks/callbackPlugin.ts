/** The host-callbacks fixture as installable packages: as it declares itself, and with its client_requests left out. */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import type { CallResult } from '../../src/shapes/PluginSession.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures/plugins/host-callbacks');
const built: string[] = [];

/** The op id of a host-callbacks tool. */
export const op = (tool: string, pluginId = 'host-callbacks'): string => `plug.${pluginId}.${tool}`;

/**
 * The fixture package. `undeclared` gives it another plugin id and no
 * client_requests (the same code, which still sends its requests).
 */
export async function callbackPackage(variant: 'declared' | 'undeclared' = 'declared'): Promise<string> {
  const dir = await packageFixturePlugin(FIXTURE, { bundle: ['bin/callbacks.mjs'] });
  built.push(dir);
  if (variant === 'undeclared') {
    const path = join(dir, 'manifest.json');
    const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown> & { declared_capabilities: Record<string, unknown> };
    const { client_requests: _dropped, ...capabilities } = manifest.declared_capabilities;
    await writeFile(
      path,
      JSON.stringify({ ...manifest, plugin_id: 'host-callbacks-undeclared', namespace_owner: 'io.example.host-callbacks-undeclared', declared_capabilities: capabilities }),
    );
  }
  return dir;
}

/** Removes every package built here. */
export async function removeCallbackPackages(): Promise<void> {
  await Promise.all(built.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/** The JSON a host-callbacks tool answered with: what the client sent back, or `{ error: { code, message } }`. */
export function answerOf(result: CallResult): Record<string, unknown> {
  const value = result.value as { content?: { type: string; text?: string }[] };
  const text = value.content?.[0]?.text;
  if (text === undefined) throw new Error(`no text content in ${JSON.stringify(result.value)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * The published server-everything as the host-everything fixture packages it,
 * its manifest declaring `kinds` and the tools the server adds for them
 * (it registers trigger-sampling-request and get-roots-list only for a client
 * that announces sampling and roots).
 */
export async function everythingPackage(kinds: readonly string[], extraTools: readonly string[]): Promise<string> {
  const dir = await packageFixturePlugin(join(FIXTURE, '..', 'host-everything'), { bundle: ['bin/everything.mjs'] });
  built.push(dir);
  const path = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown> & { declared_capabilities: Record<string, unknown>; advertised_tools: unknown[] };
  await writeFile(
    path,
    JSON.stringify({
      ...manifest,
      declared_capabilities: { ...manifest.declared_capabilities, client_requests: kinds },
      advertised_tools: [...manifest.advertised_tools, ...extraTools.map((name) => ({ name, risk_class: 'read' }))],
    }),
  );
  return dir;
}
