/**
 * What the seventh round of docs/published-servers.md ("Servers tried")
 * found wrong in the host, each with a server packed locally (`npm pack`)
 * that fails as the published one does:
 *
 * - @dynatrace-oss/dynatrace-mcp-server@2.1.2 (sixth round) declares no
 *   `engines`, bundles an undici that calls Node 22.10's
 *   `markAsUncloneable`, and on Node 20 dies of "TypeError:
 *   webidl.util.markAsUncloneable is not a function": the install's hint was
 *   the generic one, naming no Node. The fixture calls the missing function
 *   the same way on every Node, so the test does not depend on the host's.
 * - A server that imports a built-in module of a newer Node (@bytebase/dbhub's
 *   `node:sqlite`) with no `engines` either: ERR_UNKNOWN_BUILTIN_MODULE.
 * - A SyntaxError of JSON.parse (a config file) is the server's own, not a
 *   newer Node's: no such hint.
 * - mcp-mongo-server@3.0.1 without a URL prints its reason, then a usage
 *   block, and exits 1: the message said only "see details.stderr_tail".
 * - @doist/todoist-ai@9.0.0 depends on a version the registry lacks: npm's
 *   last line, "A complete log of this run can be found in: <staging>/…",
 *   named a file removed with the staging directory and pushed npm's reason
 *   out of the message.
 * - hevy-mcp@6.1.13 declares an outputSchema and answers a failed request
 *   with `isError` and structuredContent `{ error: {...} }`, which the schema
 *   rejects: the host refused the answer as PLUGIN_MALFORMED_RESPONSE ("Send
 *   exactly one of result and error"), hiding the tool's own words. A tool
 *   error is exempt from the output schema, as the MCP SDK's server exempts
 *   it; a successful result that breaks its schema is still refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { newerNodeSignIn } from '../../src/installer/newerNode.js';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// dynatrace-mcp-server's bundled undici: an object of Node's whose newer method is missing, called at load.
const UNCLONEABLE_SERVER = `#!/usr/bin/env node
const webidl = { util: {} };
webidl.util.markAsUncloneable(new EventTarget());
`;

// A built-in module no Node before the one the author used has (the specifier is one no Node has, for every host).
const BUILTIN_SERVER = `#!/usr/bin/env node
await import('node:sqlite-of-a-future-node');
`;

// A server that reads a broken config file: JSON.parse's SyntaxError.
const JSON_SERVER = `#!/usr/bin/env node
JSON.parse('{ "port": 80, }');
`;

// mcp-mongo-server@3.0.1 with neither a URL argument nor MCP_MONGODB_URI.
const USAGE_SERVER = `#!/usr/bin/env node
console.error('Please provide a MongoDB connection URL via command-line argument or MCP_MONGODB_URI environment variable');
console.error('Usage: command <mongodb-url> [--read-only|-r] [--transport stdio|http] [--port 3001]');
console.error('   or: MCP_MONGODB_URI=<mongodb-url> [MCP_MONGODB_READONLY=true] command');
process.exit(1);
`;

// hevy-mcp@6.1.13's shape: an output schema for success, a structured error envelope for failure.
const ERROR_ENVELOPE_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const outputSchema = { type: 'object', properties: { workouts: { type: 'array' }, page: { type: 'number' } }, required: ['workouts', 'page'] };
const tools = [
  { name: 'get-workouts', description: 'Workouts', inputSchema: { type: 'object', properties: { fail: { type: 'boolean' } } }, outputSchema, annotations: { readOnlyHint: true } },
];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'hevy-like', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools } });
  if (params.arguments?.fail === true) {
    return send({ id, result: { isError: true, content: [{ type: 'text', text: '[get-workouts] Error: Unable to complete the request after 4 attempts' }], structuredContent: { error: { code: 'HEVY_RETRY_EXHAUSTED' } } } });
  }
  // A success that breaks the schema: no page.
  send({ id, result: { content: [{ type: 'text', text: '[]' }], structuredContent: { workouts: [] } } });
});
`;

describe('published servers, seventh round: fixtures', { timeout: 180_000 }, () => {
  it("keeps npm's reason in the message and drops its pointer to a debug log that is gone (a dependency version the registry lacks)", async () => {
    const work = await pool.profile();
    const pkg = join(work, 'shim');
    await mkdir(join(pkg, 'bin'), { recursive: true });
    await writeFile(join(pkg, 'bin', 'server.mjs'), '#!/usr/bin/env node\n', { mode: 0o755 });
    await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'shim', version: '1.0.0', type: 'module', bin: 'bin/server.mjs', dependencies: { 'left-pad': '999.0.0' } }));
    execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', work], { cwd: pkg, stdio: 'ignore' });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${join(work, 'shim-1.0.0.tgz')}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_NPM_INSTALL_FAILED', details: { reason: 'npm_failed' } });
    expect(error.message).toContain('No matching version found for left-pad@999.0.0');
    expect(error.message).not.toContain('A complete log of this run');
    expect(String(error.details.stderr_tail)).not.toContain('A complete log of this run');
  });

  it("passes a tool error's structured envelope on, though the tool's output schema rejects it (hevy-mcp), and still refuses such a success", async () => {
    const profileDir = await pool.profile();
    const tarball = await packServer(profileDir, { name: 'hevy-like', source: ERROR_ENVELOPE_SERVER });
    const installer = await pool.open(profileDir, { profileKind: 'standard' });
    expect((await installer.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    await installer.close();
    const host = await pool.open(profileDir, { profileKind: 'standard' });
    const failed = (await host.call('plug.hevy-like.get-workouts', { fail: true }, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(failed.code).toBe('PLUGIN_TOOL_ERROR');
    expect(failed.message).toContain('Unable to complete the request after 4 attempts');
    const broken = (await host.call('plug.hevy-like.get-workouts', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(broken.code).toBe('PLUGIN_MALFORMED_RESPONSE');
    expect(broken.message).toContain("does not match the tool's output schema");
  });

  it('quotes the line a server printed before its usage (mcp-mongo-server without a URL)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'usage', source: USAGE_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error.message).toBe(
      'introspecting the server failed: the server closed its stdout before answering (exited with status 1); its stderr says: Please provide a MongoDB connection URL via command-line argument or MCP_MONGODB_URI environment variable (details.stderr_tail has the rest)',
    );
  });

  it('names the Node a server without engines ran on when it dies of a newer API it calls (dynatrace: markAsUncloneable)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'uncloneable', source: UNCLONEABLE_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', newer_node: { sign: 'TypeError: webidl.util.markAsUncloneable is not a function' } } });
    const version = (error.details.newer_node as { interpreter_version: string }).interpreter_version;
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(error.hint).toMatch(new RegExp(`^Its server ran on Node ${version.replace(/\./g, '\\.')} \\(/`));
    expect(error.hint).toContain('The package declares no engines.node, but it may need a newer Node');
    // The generic advice follows.
    expect(error.hint).toContain('The server did not answer initialize and tools/list in its sandbox');
  });

  it('names it for a built-in module the Node lacks (ERR_UNKNOWN_BUILTIN_MODULE)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'builtin', source: BUILTIN_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error.details.newer_node).toMatchObject({ sign: expect.stringMatching(/ERR_UNKNOWN_BUILTIN_MODULE|No such built-in module: node:sqlite-of-a-future-node/) });
    expect(error.hint).toMatch(/^Its server ran on Node \d+\.\d+\.\d+ .* it may need a newer Node/);
  });

  it("does not blame the Node for JSON.parse's SyntaxError", async () => {
    const tarball = await packServer(await pool.profile(), { name: 'bad-config', source: JSON_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(String(error.details.stderr_tail)).toContain('SyntaxError');
    expect(error.details.newer_node).toBeUndefined();
    expect(error.hint).not.toContain('newer Node');
  });
});

describe('the newer-Node signs', () => {
  it.each([
    ['starting\nTypeError: webidl.util.markAsUncloneable is not a function\n    at Object.<anonymous>', 'TypeError: webidl.util.markAsUncloneable is not a function'],
    ['Error [ERR_UNKNOWN_BUILTIN_MODULE]: No such built-in module: node:sqlite', 'Error [ERR_UNKNOWN_BUILTIN_MODULE]: No such built-in module: node:sqlite'],
    ['TypeError [ERR_UNKNOWN_FILE_EXTENSION]: Unknown file extension ".ts" for /srv/index.ts', 'TypeError [ERR_UNKNOWN_FILE_EXTENSION]: Unknown file extension ".ts" for /srv/index.ts'],
    ['TypeError: Object.groupBy is not a function', 'TypeError: Object.groupBy is not a function'],
    ['TypeError: Promise.withResolvers is not a function', 'TypeError: Promise.withResolvers is not a function'],
    ['ReferenceError: WebSocket is not defined', 'ReferenceError: WebSocket is not defined'],
    ["    at x\nSyntaxError: Unexpected identifier 'res'", "SyntaxError: Unexpected identifier 'res'"],
  ])('%s', (text, sign) => {
    expect(newerNodeSignIn(text)).toBe(sign);
  });

  it.each([
    'SyntaxError: Unexpected token } in JSON at position 12',
    'SyntaxError: Expected double-quoted property name in JSON at position 14',
    'TypeError: client.connect is not a function',
    'ReferenceError: foo is not defined',
  ])('not: %s', (text) => {
    expect(newerNodeSignIn(text)).toBeUndefined();
  });
});
