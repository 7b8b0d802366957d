/**
 * Seed 004 (core/plugin handshake runtime): the invocation timeout is owned
 * by the core, "plugin-specific timeout or runtime default", and so is the
 * wait for the handshake line. Through PluginHost with real handshake plugin
 * subprocesses; each case sets the plugin's own timeout far below the host's,
 * so only the per-plugin setting can produce the failure in time.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { validateHandshakeManifest } from '../../src/manifest/handshake.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const fixtureDir = join(import.meta.dirname, '../../fixtures/plugins/host-handshake');
const HOST_WIDE_MS = 120_000;

/** The host-handshake package with its plugin replaced by one that reads stdin and never answers the handshake. */
async function silentHandshakePackage(): Promise<string> {
  const dir = await packageFixturePlugin(fixtureDir, { bundle: ['bin/plugin.mjs'] });
  await writeFile(join(dir, 'bin', 'plugin.mjs'), '#!/usr/bin/env node\nprocess.stdin.resume();\n', { mode: 0o755 });
  return dir;
}

describe('seed 004 handshake runtime: per-plugin timeouts through PluginHost', () => {
  const pool = new HostPool();
  afterEach(() => pool.cleanup());
  afterAll(() => removePackages());

  async function hostWith(pkg: string, plugin: Record<string, number>) {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(pkg, { canary: false });
    if (installed.isErr()) throw installed.error;
    await installer.close();
    return pool.open(profile, { callTimeoutMs: HOST_WIDE_MS, handshakeTimeoutMs: HOST_WIDE_MS, plugins: { 'host-handshake': plugin } });
  }

  it('seed 004 "Invocation timeout is owned by core (plugin-specific timeout or runtime default)": the plugin\'s callTimeoutMs fails an unanswered execute with PLUGIN_TIMEOUT', async () => {
    const host = await hostWith(await packageFixturePlugin(fixtureDir, { bundle: ['bin/plugin.mjs'] }), { callTimeoutMs: 300 });
    const error = (await host.call('plug.host-handshake.wait', {}))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ plugin_id: 'host-handshake', timeout_ms: 300 });
    // A call's own timeout still wins over the plugin's (generous here, so a loaded machine cannot fail it).
    expect((await host.call('plug.host-handshake.upper', { text: 'ok' }, { timeoutMs: 60_000 }))._unsafeUnwrap().value).toBe('OK');
  });

  it('seed 004 "Timeout is a hard execution failure": the plugin\'s handshakeTimeoutMs fails a launch whose handshake line never comes', async () => {
    const host = await hostWith(await silentHandshakePackage(), { handshakeTimeoutMs: 300 });
    const error = (await host.call('plug.host-handshake.echo', { a: 1 }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TIMEOUT');
    expect(error.details).toMatchObject({ plugin_id: 'host-handshake', phase: 'handshake', timeout_ms: 300 });
  });
});

describe('seed 004 handshake response: required manifest fields plugin_id, plugin_version, protocol_version, exposed_tools', () => {
  const complete = (): Record<string, unknown> => ({ plugin_id: 'rterm.echo', plugin_version: '1.2.0', protocol_version: 'rterm.plugin.v1', exposed_tools: ['echo'] });

  it('a manifest with the four fields and no capabilities is accepted', () => {
    expect(validateHandshakeManifest(complete()).isOk()).toBe(true);
  });

  it.each(['plugin_id', 'plugin_version', 'protocol_version', 'exposed_tools'])('a manifest without %s fails the handshake (PLUGIN_HANDSHAKE_FAILED at that field)', (field) => {
    const manifest = complete();
    delete manifest[field];
    const error = validateHandshakeManifest(manifest)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect((error.details.violations as Array<{ pointer: string }>).map((v) => v.pointer)).toEqual([`/${field}`]);
  });
});
