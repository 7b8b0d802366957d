/**
 * The plugin id the host generates for an npm server must be one it accepts.
 * Found with @google-cloud/cloud-run-mcp 1.10.0 in the fourth round of
 * published servers: its id was `cloud-run-mcp`, and after npm fetched it and
 * its server listed its tools (154 s), the install was refused with
 * PLUGIN_NAMESPACE_CONFLICT, since `cloud` is a first-party prefix the GUM
 * contract reserves and a generated manifest is in GUM form (refused under
 * those prefixes whatever the host's preset); its hint told the user to pick
 * another plugin_id in a manifest they had not written. Such ids now get
 * `npm-` in front. The package is packed locally with `npm pack`.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { pluginIdOf } from '../../src/installer/npmManifest.js';
import { NamespaceLock } from '../../src/namespace/NamespaceLock.js';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'cloud', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'deploy', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'deployed' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: generated plugin ids under a reserved first-party prefix', () => {
  it('puts npm- in front of an id the GUM contract reserves, and leaves every other id as it was', () => {
    const gum = new NamespaceLock({ preset: 'gum', profileKind: 'standard' });
    const cases: Record<string, string> = {
      '@google-cloud/cloud-run-mcp': 'npm-cloud-run-mcp',
      'gmail-mcp': 'npm-gmail-mcp',
      docs: 'npm-docs',
      '@google/mcp': 'npm-google-mcp',
      'youtube-transcript-mcp': 'npm-youtube-transcript-mcp',
      // Not under a prefix: `gmailer` is not `gmail-`, and the prefix must begin the id.
      'gmailer-mcp': 'gmailer-mcp',
      '@gongrzhe/server-gmail-autoauth-mcp': 'server-gmail-autoauth-mcp',
      '@playwright/mcp': 'playwright-mcp',
      '@modelcontextprotocol/server-memory': 'server-memory',
    };
    for (const [name, id] of Object.entries(cases)) {
      expect(pluginIdOf(name), name).toBe(id);
      expect(gum.reservedPrefixOf(pluginIdOf(name)), name).toBeUndefined();
    }
    expect(pluginIdOf(`cloud-${'x'.repeat(80)}`)).toHaveLength(64);
  });

  it('installs and wraps a server named under a reserved prefix as npm-<name>', { timeout: 120_000 }, async () => {
    const tarball = await packServer(await pool.profile(), { name: '@acme/cloud-tools', source: SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const wrapped = (await host.wrap(`npm:${tarball}`))._unsafeUnwrap();
    expect(JSON.parse(wrapped.manifestText)).toMatchObject({ plugin_id: 'npm-cloud-tools' });
    const installed = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrap();
    expect(installed.plugin).toMatchObject({ name: 'npm-cloud-tools', namespace_owner: 'npm:@acme/cloud-tools' });
    expect(installed.plugin.operations.map((o) => o.op_id)).toEqual(['plug.npm-cloud-tools.deploy']);
  });
});
