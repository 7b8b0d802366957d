/**
 * What the sixth round of docs/published-servers.md ("Servers tried") found
 * wrong in the host, each with a server packed locally (`npm pack`) that
 * lists its tools as the published one does:
 *
 * - @currents/mcp@2.1.1 builds its tool list at each start, with the start
 *   time in input-schema defaults (`from`: 30 days ago, `to`: now). A cold
 *   start that trusted the list recorded for the same code found the fresh
 *   one different and failed PLUGIN_TOOLS_MISMATCH (`differs_from_recorded`),
 *   counted toward quarantine, and forgot the record, which the next start
 *   made again: every other call after the install failed, and the one after
 *   each failure found the plugin quarantined.
 * - @shortcut/mcp@0.25.0 (and @instantdb/mcp@1.0.67, @kimuson/modular-mcp@0.0.5)
 *   exits 1 after one line of its own words on stderr ("A Shortcut api token
 *   is required."), naming no error: the install's message said only "see
 *   details.stderr_tail".
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// @currents/mcp@2.1.1's shape: the defaults are computed when the server starts, so each start lists other bytes.
const START_TIME_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const started = new Date(Date.now() - Math.floor(Math.random() * 1e6)).toISOString();
const tools = [{ name: 'get-runs', description: 'Runs of a project', inputSchema: { type: 'object', properties: { to: { type: 'string', default: started } } }, annotations: { readOnlyHint: true } }];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'start-time', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools } });
  send({ id, result: { content: [{ type: 'text', text: 'runs until ' + started }] } });
});
`;

// @shortcut/mcp@0.25.0 without SHORTCUT_API_TOKEN: one line, no error's name, exit 1.
const ONE_LINE_SERVER = `#!/usr/bin/env node
process.stderr.write('A Shortcut api token is required.\\n');
process.exit(1);
`;

describe('published servers, sixth round: fixtures', { timeout: 180_000 }, () => {
  it('quotes the one line a server wrote on stderr before it exited, though it names no error (shortcut: token required)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'one-line', source: ONE_LINE_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
    expect(error.message).toContain('; its stderr says: A Shortcut api token is required. (details.stderr_tail has the rest)');
  });

  it('runs a server whose list names its start time at every start, failing at most the one start that trusted a record', async () => {
    const profileDir = await pool.profile();
    const tarball = await packServer(profileDir, { name: 'start-time', source: START_TIME_SERVER });
    const installer = await pool.open(profileDir, { profileKind: 'standard' });
    expect((await installer.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    await installer.close();

    // Each call in a host of its own, as each CLI `run` is: a cold start of the same pinned code.
    const outcomes = [];
    for (let i = 0; i < 5; i++) {
      const host = await pool.open(profileDir, { profileKind: 'standard' });
      outcomes.push(await host.call('plug.start-time.get-runs', {}, { maxRisk: 'destructive' }));
      await host.close();
    }
    // The second start used the record the first one made and met another list; from then on every start checks first,
    // and that one refusal did not quarantine the plugin (before: ok, mismatch, ok, mismatch, VARIANT_QUARANTINED).
    expect(outcomes.map((outcome) => (outcome.isOk() ? 'ok' : outcome.error.code))).toEqual(['ok', 'PLUGIN_TOOLS_MISMATCH', 'ok', 'ok', 'ok']);
    const refused = outcomes[1]?._unsafeUnwrapErr();
    expect(refused?.details.differs_from_recorded).toBe(true);
    expect(refused?.hint).toMatch(/^The plugin listed its tools differently from an earlier start of the same code .* later starts of this code check tools\/list before their first call/);
  });
});
