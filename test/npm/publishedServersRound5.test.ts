/**
 * What the fifth round of docs/published-servers.md ("Servers tried") found
 * wrong in the host, each with a server packed locally (`npm pack`) that
 * fails as the published one does, and one from the registry:
 *
 * - slack-mcp-server@1.3.0, a JS launcher of a Go binary from an optional
 *   dependency, checks its token against slack.com before it answers
 *   `initialize`; offline its Go resolver logs "dial udp …:53: connect:
 *   network is unreachable" and it exits 1. Go's wording was not a network
 *   pattern, so the install's hint never said the start had no network, and a
 *   call failing in the same words got only the generic hint;
 * - mcp-mermaid@0.4.1 answers a call -32603 "browserType.launch: Executable
 *   doesn't exist at …" (the Chromium its postinstall downloads) and writes
 *   nothing on stderr, where PLUGIN_INTERNAL_ERROR's hint sent the caller;
 * - bunqueue@2.9.5's entry points are `#!/usr/bin/env bun`, which this
 *   machine lacks: the refusal's hint told the user to ship a real
 *   entry-point file inside the package, not to install bun;
 * - @morphllm/morphmcp@0.8.213 lists no tool without its API key: the
 *   manifest generated from none was refused as PLUGIN_MANIFEST_INVALID
 *   ("/advertised_tools: must NOT have fewer than 1 items", a staging file's
 *   path, "Fix every violation"), as if the user had written it;
 * - @larksuiteoapi/lark-mcp@0.5.1 logs a warning naming keytar's missing
 *   addon ("… Error: Cannot find module …"), goes on, and dies of a missing
 *   setting: the message quoted the warning, the first error it named;
 * - agentdb@1.6.1 dies on sharp 0.32, whose addon an install script fetches:
 *   sharp throws `new Error(help.join('\n'))`, a message that begins with a
 *   line feed, so Node prints a bare "Error: " line and the message below it.
 *   The install's message said only "see details.stderr_tail", whose last
 *   lines the CLI shows are stack frames.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// What slack-mcp-server 1.3.0's Go binary logs when its look-up of slack.com finds no route (its stack trace cut).
const GO_UNREACHABLE =
  'Post \\"https://slack.com/api/auth.test\\": dial tcp: lookup slack.com on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable';

// --check-at-start: exits 1 with the Go log lines, as slack-mcp-server does offline; else it starts and `channels` fails in those words.
const GO_LOGGING_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
if (process.argv.includes('--check-at-start')) {
  process.stderr.write('{"level":"fatal","message":"Authentication failed - check your Slack tokens","app":"slack-mcp-server","error":"${GO_UNREACHABLE}"}\\n');
  process.stderr.write('Error: Command failed: slack-mcp-server-linux-amd64 --transport stdio\\n');
  process.exit(1);
}
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'go-logging', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools: [{ name: 'channels', inputSchema: { type: 'object' } }] } });
  send({ id, result: { isError: true, content: [{ type: 'text', text: "${GO_UNREACHABLE}" }] } });
});
`;

// sharp 0.32's lib/sharp.js when its addon is missing: the message begins with a line feed, so Node prints "Error: " alone.
const SHARP_SERVER = `#!/usr/bin/env node
process.stderr.write('Database schema initialized\\n');
const help = ['', 'Something went wrong installing the "sharp" module', '', "Cannot find module '../build/Release/sharp-linux-x64.node'", 'Require stack:', '- /pkg/node_modules/sharp/lib/sharp.js', '', 'Possible solutions:', '- Install with verbose logging'];
throw new Error(help.join('\\n'));
`;

// mcp-mermaid@0.4.1's answer when the Chromium its postinstall downloads is missing: JSON-RPC -32603, nothing on stderr.
const BROWSERLESS_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'browserless', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools: [{ name: 'render', inputSchema: { type: 'object' } }] } });
  send({ id, error: { code: -32603, message: "MCP error -32603: Failed to generate mermaid: browserType.launch: Executable doesn't exist at " + process.env.HOME + '/.cache/ms-playwright/chromium_headless_shell-1255/chrome-headless-shell' } });
});
`;

// @morphllm/morphmcp@0.8.213 without its API key: it answers initialize and lists no tools.
const TOOLLESS_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
process.stderr.write('Secure MCP Filesystem Server running on stdio\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'toolless', version: '1.0.0' } } });
  if (method === 'tools/list') return send({ id, result: { tools: [] } });
  send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

// @larksuiteoapi/lark-mcp@0.5.1 (mcp): warns about keytar's missing addon, goes on, then dies of a missing setting.
const WARNED_SERVER = `#!/usr/bin/env node
process.stderr.write("[WARN] [StorageManager] Failed to initialize encryption: Error: Cannot find module '../build/Release/keytar.node'\\nRequire stack:\\n- /pkg/node_modules/keytar/lib/keytar.js\\n");
process.stderr.write('[WARN] [StorageManager] Builtin User Access Token Store will be disabled.\\n');
throw new Error('[Lark MCP]  appId, and appSecret are required');
`;

describe('published servers, fifth round: fixtures', { timeout: 120_000 }, () => {
  it('quotes the error a server died of, not a warning it logged before (lark-mcp: keytar, then appId)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'warned', source: WARNED_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
    expect(error.message).toContain('; its stderr says: Error: [Lark MCP]  appId, and appSecret are required (details.stderr_tail has the rest)');
  });

  it('says a server listed no tools, instead of refusing the manifest made from none as if the user wrote it', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'toolless', source: TOOLLESS_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', listed_tools: 0, stderr_tail: 'Secure MCP Filesystem Server running on stdio\n' } });
    expect(error.message).toBe('introspecting the server failed: it answered initialize and tools/list but listed no tools, and a plugin needs at least one');
    expect(error.hint).toMatch(/^A server that lists its tools only once it is configured .* had no network, .*\(--grant-env NAME\), .*\(--arg\), .*--manifest <file>\)\.$/);
    // wrap says the same, before anything is installed.
    expect((await host.wrap(`npm:${tarball}`))._unsafeUnwrapErr()).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { listed_tools: 0 } });
  });

  it('sends the user to the interpreter search path, not the package, when its #! runtime is missing here (bunqueue-mcp: bun)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'bun-server', source: "#!/usr/bin/env bun\nconsole.log('never run');\n" });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'interpreter_not_found', interpreter: 'bun', search_path: '/usr/bin:/bin' } });
    expect(error.message).toMatch(/^The interpreter "bun" of .*\/bin\/server\.mjs is not on the interpreter search path\.$/);
    expect(error.hint).toBe(
      "The package's entry point is run by bun (its #! line), which this machine does not have where the host looks: install it, or put the folder that holds it first on the interpreter search path (the interpreterSearchPath option, else PATH; details.search_path), then install again.",
    );
  });

  it('does not send the caller to an empty stderr when a call fails with -32603 (mcp-mermaid without its Chromium)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'browserless', source: BROWSERLESS_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    const error = (await host.call('plug.browserless.render', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_INTERNAL_ERROR', details: { stderr_tail: '', jsonrpc_code: -32603 } });
    expect(error.message).toContain("browserType.launch: Executable doesn't exist at ");
    expect(error.hint).toMatch(/^The plugin had written nothing on stderr when it answered: .*'info <plugin>'/);
  });

  it("names the missing network when a start fails in Go's words (network is unreachable)", async () => {
    const tarball = await packServer(await pool.profile(), { name: 'go-logging', source: GO_LOGGING_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false, args: ['--check-at-start'] }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
    expect(error.hint).toMatch(/^Its stderr reads like a network failure: the introspection start has no network unless the install grants it/);
    // Said once: the generic advice after it no longer repeats the grants (@sveltejs/mcp@0.1.26's hint had them twice).
    expect(error.hint.split('--grant-egress host:port').length).toBe(2);
    expect(error.hint).toMatch(/; pass the args it needs, or the manifest install option\.$/);
  });

  it("names the network grant when a call fails in Go's words, and not once the network is granted", async () => {
    const tarball = await packServer(await pool.profile(), { name: 'go-logging', source: GO_LOGGING_SERVER });
    const offline = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await offline.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    const refused = (await offline.call('plug.go-logging.channels', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_TOOL_ERROR');
    expect(refused.hint).toMatch(/^The plugin has no network in its sandbox .*\(CLI --grant-network\)/);

    const networked = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    expect((await networked.install(`npm:${tarball}`, { canary: false, grant: { network: true } })).isOk()).toBe(true);
    const failed = (await networked.call('plug.go-logging.channels', {}, { maxRisk: 'destructive' }))._unsafeUnwrapErr();
    expect(failed.hint).not.toContain('no network in its sandbox');
  });

  it('quotes an error whose message begins on the line below "Error: " (sharp 0.32 without its addon)', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'sharp-user', source: SHARP_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
    // The lines up to the first stack frame, joined; the quote is cut at quotedStderrLineMaxChars (300).
    expect(error.message).toContain(
      `its stderr says: Error: Something went wrong installing the "sharp" module Cannot find module '../build/Release/sharp-linux-x64.node' Require stack: - `,
    );
    expect(error.message).not.toContain('    at ');
  });
});

// npm fetches the launcher and its Go binary (an optional dependency, 10 MB) from the registry.
describe('published servers, fifth round: from the registry', { timeout: 300_000 }, () => {
  it('slack-mcp-server@1.3.0 (--transport stdio, a token granted): its offline start names the network', async () => {
    const token = 'xoxp-0000000000-fifth-round-token';
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin', env: { ...process.env, SLACK_MCP_XOXP_TOKEN: token } });
    const error = (
      await host.install('npm:slack-mcp-server@1.3.0', { canary: false, args: ['--transport', 'stdio'], grant: { network: false, fs_write_dir: '', env_allow: ['SLACK_MCP_XOXP_TOKEN'] } })
    )._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
    expect(String(error.details['stderr_tail'])).toContain('connect: network is unreachable');
    expect(error.hint).toMatch(/^Its stderr reads like a network failure/);
    expect(JSON.stringify(error)).not.toContain(token);
  });
});
