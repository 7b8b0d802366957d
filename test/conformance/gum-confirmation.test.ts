/**
 * Seed 001 (GUM plugin contract), Manifest ABI: confirmation_policy
 * "high_stakes_write … makes gum.write and gum call --risk=write require user
 * confirmation before dispatch while preserving MCP destructiveHint=false".
 * The gateway is this host's MCP surface: a high_stakes_write tool whose
 * plugin says it is not destructive is listed as not destructive (the
 * confirmation is the host's, not a hint rewritten). Real host-probe plugin
 * (its write_note tool annotated destructiveHint: false), served over
 * Streamable HTTP to the SDK's Client.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { gatewayTestPools } from '../support/gatewayHarness.js';

const TOKEN = 'confirmation-token-0123456789abcdef';
const { pool, gateways } = gatewayTestPools();
const packages: string[] = [];
afterAll(() => Promise.all(packages.map((dir) => rm(dir, { recursive: true, force: true }))));

/** The host-probe package whose write_note tool lists annotations { destructiveHint: false }, as a careful author would. */
async function annotatedProbe(): Promise<string> {
  const dir = await packageFixturePlugin(join(import.meta.dirname, '../../fixtures/plugins/host-probe'), { bundle: ['bin/probe.mjs'] });
  packages.push(dir);
  const entry = join(dir, 'bin', 'probe.mjs');
  const text = await readFile(entry, 'utf8');
  const description = '"Appends a note to a file in its data directory"';
  expect(text.split(description)).toHaveLength(2);
  await writeFile(entry, text.replace(description, `${description}, annotations: { destructiveHint: false }`));
  return dir;
}

describe('seed 001 confirmation_policy = "high_stakes_write" keeps MCP destructiveHint=false', () => {
  it('the gateway lists the high_stakes_write tool with the plugin\'s destructiveHint: false, not as destructive', { timeout: 120_000 }, async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile);
    const installed = await installer.install(await annotatedProbe(), { canary: false });
    expect(installed._unsafeUnwrap().plugin.name).toBe('host-probe');
    await installer.close();
    const host = await pool.open(profile);
    expect((await host.info('host-probe'))._unsafeUnwrap().operations.find((o) => o.tool_name === 'write_note')).toMatchObject({ confirmation_policy: 'high_stakes_write' });

    const gateway = await gateways.serve(host, { http: { token: TOKEN, port: 0 } });
    const client = gateways.keep(new Client({ name: 'confirmation-test', version: '1.0.0' }));
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url ?? ''), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
    const { tools } = await client.listTools();
    const writeNote = tools.find((t) => t.name === 'plug.host-probe.write_note');
    expect(writeNote?.annotations).toMatchObject({ destructiveHint: false });
  });
});
