/**
 * Published servers stopped by the host default sandbox fail their calls in
 * their own words. One that needs a web API: "fetch failed" as a tool error
 * (@kazuph/mcp-fetch, firecrawl-mcp) or as a JSON-RPC internal error
 * (@modelcontextprotocol/server-github, @notionhq/notion-mcp-server: getaddrinfo
 * EAI_AGAIN), or one that connects to a local database (@modelcontextprotocol/server-postgres:
 * "connect EACCES 127.0.0.1:5432", the Landlock sandbox's refusal); the host's hint then names the grant that would let it through
 * (with the network granted it does not). One that writes next to its own
 * files (@modelcontextprotocol/server-memory's default memory.jsonl): EROFS
 * inside the install root; the hint says to point it at the data directory.
 * Pointed at `/tmp` by name (not TMPDIR), it works: the sandbox's /tmp is the
 * plugin's own. The same write refused in macOS's words (Seatbelt keeps the
 * machine's /tmp read-only): the hint says no grant helps.
 */
import { existsSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// fetch_as_result answers isError with the fetch error's words; fetch_as_error answers a JSON-RPC -32603 with them;
// connect_as_error with those of a socket to a local database, as server-postgres does (its pg client's 'connect EACCES 127.0.0.1:5432');
// kubectl_as_error with what kubectl, a Go program, says of the same refusal under mcp-server-kubernetes;
// sentry_as_result with @sentry/mcp-server's words for a failed look-up, resolver_as_error with glibc's, as a Python server prints them, resend_as_result with the Resend SDK's (resend-mcp);
// listen_as_result with the words of a listen the sandbox refused, as @agentdeskai/browser-tools-mcp reports its browser connector's port;
// fetch_as_rejection with a fetch failure as JSON-RPC -32600 (invalid request), as @translated/lara-mcp answers every failed API call.
const FETCHING_SERVER = `#!/usr/bin/env node
import { connect, createServer } from 'node:net';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const tools = ['fetch_as_result', 'fetch_as_error', 'connect_as_error', 'kubectl_as_error', 'sentry_as_result', 'resolver_as_error', 'resend_as_result', 'listen_as_result', 'fetch_as_rejection'].map((name) => ({ name, inputSchema: { type: 'object' } }));
const listened = () => new Promise((resolve) => { const server = createServer(); server.on('error', (error) => resolve(error.message)).listen(0, '127.0.0.1', () => server.close(() => resolve('listening'))); });
const connected = () => new Promise((resolve) => connect(5432, '127.0.0.1').on('connect', () => resolve('reached')).on('error', (error) => resolve(error.message)));
createInterface({ input: process.stdin }).on('line', async (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'fetcher', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools } });
  if (method !== 'tools/call') return send({ id, error: { code: -32601, message: 'no ' + method } });
  if (params.name === 'connect_as_error') return send({ id, error: { code: -32603, message: await connected() } });
  if (params.name === 'listen_as_result') return send({ id, result: { isError: true, content: [{ type: 'text', text: 'The browser connector is not available: ' + await listened() } ] } });
  if (params.name === 'kubectl_as_error') return send({ id, error: { code: -32603, message: 'Command failed: kubectl get pods\\nGet "http://localhost:8080/api?timeout=32s": dial tcp 127.0.0.1:8080: connect: permission denied' } });
  if (params.name === 'sentry_as_result') return send({ id, result: { isError: true, content: [{ type: 'text', text: 'Unable to connect to https://sentry.io/api/0/organizations/ - DNS temporarily unavailable' }] } });
  if (params.name === 'resend_as_result') return send({ id, result: { isError: true, content: [{ type: 'text', text: 'Failed to list API keys: Unable to fetch data. The request could not be resolved.' }] } });
  if (params.name === 'resolver_as_error') return send({ id, error: { code: -32603, message: "HTTPSConnectionPool(host='api.example.com', port=443): Failed to resolve 'api.example.com' ([Errno -3] Temporary failure in name resolution)" } });
  const failure = await fetch('https://registry.npmjs.org/').then(() => 'reached', (error) => String(error) + ' ' + String(error.cause?.code));
  if (params.name === 'fetch_as_result') send({ id, result: { isError: true, content: [{ type: 'text', text: failure }] } });
  else if (params.name === 'fetch_as_rejection') send({ id, error: { code: -32600, message: failure } });
  else send({ id, error: { code: -32603, message: failure } });
});
`;

// `remember` writes state.json next to the server, or where --state names; `--refused-as-on-macos` answers the write with
// the words Node gives when Seatbelt refuses it on macOS, where a plugin's /tmp is the machine's (no Linux backend refuses it).
const STATEFUL_SERVER = `#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const flag = process.argv.indexOf('--state');
const state = flag === -1 ? new URL('./state.json', import.meta.url) : process.argv[flag + 1];
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'stateful', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools: [{ name: 'remember', inputSchema: { type: 'object' } }] } });
  try {
    if (process.argv.includes('--refused-as-on-macos')) throw new Error("EPERM: operation not permitted, open '" + state + "'");
    writeFileSync(state, '{}');
    send({ id, result: { content: [{ type: 'text', text: readFileSync(state, 'utf8') === '{}' ? 'remembered' : 'lost' }] } });
  } catch (error) {
    send({ id, result: { isError: true, content: [{ type: 'text', text: String(error) }] } });
  }
});
`;

describe('npm: a server that writes next to its own files', { timeout: 120_000 }, () => {
  it('fails with a hint pointing at the data directory, and works when pointed there', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'stateful', source: STATEFUL_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    const error = (await host.call('plug.stateful.remember', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_TOOL_ERROR');
    expect(error.hint).toMatch(/^The plugin tried to write \/.*\/state\.json, inside its install root, .* an argument with \$\{data_dir\} \(CLI --arg\)/);
    expect(error.details['install_root_write']).toMatch(/\/bin\/state\.json$/);

    // A package that names /tmp itself rather than TMPDIR (context-mode's mkdtemp '/tmp/.ctx-mode-…'): the sandbox's
    // /tmp is its own, so the write works and nothing reaches the host's /tmp.
    const inTmpPath = `/tmp/stateful-state-${process.pid}-${Date.now()}.json`;
    const inTmp = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await inTmp.install(`npm:${tarball}`, { canary: false, args: ['--state', inTmpPath] })).isOk()).toBe(true);
    expect(textOf((await inTmp.call('plug.stateful.remember', {}, { maxRisk: 'destructive' }))._unsafeUnwrap())).toBe('remembered');
    expect(existsSync(inTmpPath)).toBe(false);

    // Refused in macOS's words, as Seatbelt refuses it there: no grant helps.
    const onMacos = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await onMacos.install(`npm:${tarball}`, { canary: false, args: ['--state', '/tmp/stateful-state.json', '--refused-as-on-macos'] })).isOk()).toBe(true);
    const tmpError = (await onMacos.call('plug.stateful.remember', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(tmpError.code).toBe('PLUGIN_TOOL_ERROR');
    expect(tmpError.hint).toMatch(/^The plugin wrote \/tmp\/stateful-state\.json, in the machine's shared temporary folder, .*on macOS .* TMPDIR /);
    expect(tmpError.details['install_root_write']).toBeUndefined();

    const pointed = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await pointed.install(`npm:${tarball}`, { canary: false, args: ['--state', '${data_dir}/state.json'] })).isOk()).toBe(true);
    expect(textOf((await pointed.call('plug.stateful.remember', {}, { maxRisk: 'destructive' }))._unsafeUnwrap())).toBe('remembered');
  });
});

describe('npm: a server that needs the network, installed without it', { timeout: 120_000 }, () => {
  it('fails its calls with a hint naming the network grant', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'fetcher', source: FETCHING_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    for (const [tool, code] of [['fetch_as_result', 'PLUGIN_TOOL_ERROR'], ['fetch_as_error', 'PLUGIN_INTERNAL_ERROR'], ['connect_as_error', 'PLUGIN_INTERNAL_ERROR'], ['kubectl_as_error', 'PLUGIN_INTERNAL_ERROR'], ['sentry_as_result', 'PLUGIN_TOOL_ERROR'], ['resolver_as_error', 'PLUGIN_INTERNAL_ERROR'], ['resend_as_result', 'PLUGIN_TOOL_ERROR'], ['listen_as_result', 'PLUGIN_TOOL_ERROR'], ['fetch_as_rejection', 'PLUGIN_REQUEST_REJECTED']] as const) {
      const error = (await host.call(`plug.fetcher.${tool}`, {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
      expect(error.code).toBe(code);
      expect(error.hint).toMatch(/^The plugin has no network in its sandbox .*\(CLI --grant-network\) .*\(--grant-egress host:port\)\. /);
    }
  });

  it('gives no such hint to a plugin that has the network', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'fetcher', source: FETCHING_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(`npm:${tarball}`, { canary: false, grant: { network: true } })).isOk()).toBe(true);
    const answered = await host.call('plug.fetcher.fetch_as_result', {}, { maxRisk: 'destructive' });
    // This machine may or may not reach the registry; either way nothing blames the sandbox.
    if (answered.isErr()) expect(answered.error.hint).not.toContain('no network in its sandbox');
    // The grant the hint names is the remedy for a refused listen too: with it the server listens.
    expect((await host.call('plug.fetcher.listen_as_result', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr().message).toContain('The browser connector is not available: listening');
  });
});
