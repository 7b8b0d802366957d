/**
 * What `run` says for two call outcomes the sixth round of
 * docs/published-servers.md met with published servers, with a hand-written
 * MCP server started in its sandbox by the real CLI:
 *
 * - mcp-deepwiki@0.0.10 drops its fetch failure and answers
 *   `{"content":[]}`: `run` printed an empty line, which reads as a lost
 *   answer. It now says the tool answered with no content; `--json` keeps
 *   the result as it came.
 * - @mongodb-js/mongodb-mcp-server@0.0.3's driver retries a refused connect
 *   for its 30 s server selection, the CLI's default call timeout, with
 *   nothing on stderr: the user got PLUGIN_TIMEOUT and "raise --timeout
 *   <ms>". The hint now says how long the call waited, that the plugin wrote
 *   nothing meanwhile, and what a longer --timeout shows.
 */
import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';
import { cli, json, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
const SCHEMA = { type: 'object', properties: {} };

/** The server: `greet` answers with no content; `shout` waits a minute, then says the database refused it. */
const SERVER = stdioMcpServerSource({
  name: 'outcomes',
  tools: [
    { name: 'greet', description: 'answers with an empty content list', inputSchema: SCHEMA },
    { name: 'shout', description: 'connects to a database that refuses, silently, then says so', inputSchema: SCHEMA },
  ],
  call: `if (params?.name === 'greet') send({ id, result: { content: [] } });
else setTimeout(() => send({ id, result: { isError: true, content: [{ type: 'text', text: 'connect ECONNREFUSED 127.0.0.1:27017' }] } }), 60_000);`,
});

describe('run: an empty result and a call that outwaits --timeout', () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  let profile: string;
  beforeAll(async () => {
    scratch = await tempDir('cli-call-outcomes-');
    const pkg = join(scratch.path, 'outcomes');
    // The greeter fixture's manifest (tools greet and shout, both read) with this server in its place.
    await cp(join(REPO, 'fixtures/plugins/install-node'), pkg, { recursive: true });
    await writeFile(join(pkg, 'bin/greeter.mjs'), SERVER, { mode: 0o755 });
    profile = join(scratch.path, 'profile');
    const installed = await cli(['install', pkg, '--dev', '--yes', '--skip-canary', '--profile-dir', profile]);
    expect(installed.code, installed.stderr).toBe(0);
  }, SLOW);
  afterAll(() => scratch.dispose());

  it('says a result with no content has none, and --json prints it as it came', { timeout: SLOW }, async () => {
    const text = await cli(['run', 'greeter', 'greet', '--profile-dir', profile, '--no-color']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe('(no content: the tool answered with an empty result)\n');

    const raw = await cli(['run', 'greeter', 'greet', '--profile-dir', profile, '--json']);
    expect(raw.code, raw.stderr).toBe(0);
    expect(json(raw)).toMatchObject({ ok: true, result: { content: [] }, is_error: false });
  });

  it('names the wait and a longer --timeout when a silent call times out', { timeout: SLOW }, async () => {
    const run = await cli(['run', 'greeter', 'shout', '--profile-dir', profile, '--no-color', '--timeout', '1500', '--json']);
    expect(run.code).toBe(1);
    const error = (json(run) as { error: { code: string; details: Record<string, unknown>; cli_hint: string } }).error;
    expect(error).toMatchObject({ code: 'PLUGIN_TIMEOUT', details: { phase: 'tools/call', timeout_ms: 1500, stderr_tail: '' } });
    expect(error.cli_hint).toBe(
      "raise --timeout <ms>: the call waited 1500 ms, and the plugin wrote nothing on stderr meanwhile. A server that waits as long for a service of its own (a database driver's connect or server-selection timeout, often 30 s) answers with its own error just after: --timeout 3000 shows it",
    );

    const text = await cli(['run', 'greeter', 'shout', '--profile-dir', profile, '--no-color', '--timeout', '1500']);
    expect(text.code).toBe(1);
    expect(text.stderr).toContain('--timeout 3000 shows it');
  });
});
