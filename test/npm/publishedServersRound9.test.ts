/**
 * What the ninth round of docs/published-servers.md ("Servers tried") found
 * wrong in the host, each with a server packed locally (`npm pack`) that
 * fails as the published one does:
 *
 * - github-mcp-server@1.8.7 links a dozen command names (`gms`, `gstatus`,
 *   …) and the bin named like the package to its CLI, `mcp-cli.js`, and
 *   only `github-mcp-server-mcp` to its MCP server. Installed as it is, the
 *   host ran the CLI, which printed its list of Git commands on stdout and
 *   exited 0 with nothing on stderr; the message said only "the server
 *   closed its stdout before answering (exited with status 0); it wrote
 *   nothing on stderr": the lines that said why were dropped as plugin
 *   output, and nothing named the bin that serves MCP.
 * - @microsoft/clarity-mcp-server@2.0.1 ships an MCP Bundle manifest
 *   (manifest.json, `manifest_version` 0.2) in its npm package, named like
 *   the package: "@microsoft/clarity-mcp-server". The host takes a shipped
 *   bundle manifest as the package's own, and refused the install:
 *   `PLUGIN_MANIFEST_INVALID` "/name: name \"@microsoft/clarity-mcp-server\"
 *   must become a plugin id".
 * - terraform-mcp-server@0.13.0 answers resources/templates/list with
 *   `{"type":"success","templates":[]}`, outside the MCP schema. The
 *   host counted that as a broken protocol and quarantined the plugin: an
 *   MCP client lists templates when it connects, so through the gateway each
 *   connect made the plugin's tools and prompts refuse for 30 s and more
 *   (VARIANT_QUARANTINED).
 * - @vibgrate/cli@2026.711.1 names one file twice, `vg` and `vibgrate`, and
 *   serves MCP with `vg serve`: the host refused it, "has 2 bins and none
 *   named 'cli', so which one is its server is not known", though both
 *   names run the same file.
 * - mcp-ripgrep@0.4.0 runs ripgrep through /bin/sh; on a machine without
 *   it, its tool error "/bin/sh: 1: rg: not found" got the generic hint
 *   ("correct the call or the upstream condition"), nothing saying a
 *   program is missing from the plugin's PATH.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HostError } from '../../src/index.js';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';
import { tempDir } from '../cli/cliHarness.js';
import { packServer } from './npmPack.js';

const SLOW = 180_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const TOKEN_VALUE = 'gk-secret-5d1f0e9a7c3b';

// github-mcp-server@1.8.7's mcp-cli.js run without a command: its banner and command list on stdout, exit 0, nothing on stderr.
// With GITKIT_TOKEN set it echoes its configuration first, token and all, as a CLI's debug output may.
const CLI = `#!/usr/bin/env node
if (process.env.GITKIT_TOKEN !== undefined) console.log('config: token=' + process.env.GITKIT_TOKEN);
console.log('');
console.log('🚀 GitKit - Git Operations CLI');
console.log('📊 Total: 3 operations');
console.log('  gstatus  - Show repository status');
`;

// The MCP server, the package's other bin.
const MCP = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'gitkit-mcp', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'git-status', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'clean' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

// github-mcp-server's layout: the bin named like the package and the command aliases run the CLI, one bin the server.
async function packGitkit(dir: string): Promise<string> {
  const pkg = join(dir, 'gitkit');
  await mkdir(join(pkg, 'dist'), { recursive: true });
  await writeFile(join(pkg, 'mcp-cli.js'), CLI, { mode: 0o755 });
  await writeFile(join(pkg, 'dist', 'index.mjs'), MCP, { mode: 0o755 });
  const bin = { gitkit: 'mcp-cli.js', gms: 'mcp-cli.js', gstatus: './mcp-cli.js', 'gitkit-mcp': 'dist/index.mjs' };
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: 'gitkit', version: '1.0.0', license: 'MIT', bin }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'gitkit-1.0.0.tgz');
}

// @microsoft/clarity-mcp-server@2.0.1's layout: its bundle manifest at the package root, its token a sensitive user_config passed in env.
const CLARITY_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
const tools = ['list-session-recordings', 'query-documentation-data'].map((name) => ({ name, inputSchema: { type: 'object' } }));
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'clarity-like', version: '2.0.1' } } });
  else if (method === 'tools/list') send({ id, result: { tools } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'token of ' + String(process.env.CLARITY_API_TOKEN).length + ' characters' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function packClarityLike(dir: string): Promise<string> {
  const pkg = join(dir, 'clarity-like');
  await mkdir(join(pkg, 'dist'), { recursive: true });
  await writeFile(join(pkg, 'dist', 'index.js'), CLARITY_SERVER, { mode: 0o755 });
  const manifest = {
    manifest_version: '0.2',
    name: '@acme/clarity-like',
    display_name: 'Acme Clarity',
    version: '2.0.1',
    description: 'MCP Server for Acme Clarity',
    author: { name: 'Acme' },
    server: {
      type: 'node',
      entry_point: 'dist/index.js',
      mcp_config: { command: 'node', args: ['${__dirname}/dist/index.js'], env: { CLARITY_API_TOKEN: '${user_config.api_token}' } },
    },
    tools: [{ name: 'list-session-recordings', description: 'Lists recordings' }, { name: 'query-documentation-data', description: 'Fetches documentation' }],
    tools_generated: false,
    license: 'MIT',
    compatibility: { platforms: ['darwin', 'win32', 'linux'], runtimes: { node: '>=16.0.0' } },
    user_config: { api_token: { type: 'string', title: 'Clarity API Token', description: 'Your data export API token', required: true, sensitive: true } },
  };
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest, null, 2));
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: '@acme/clarity-like', version: '2.0.1', type: 'module', license: 'MIT', bin: { 'clarity-like': './dist/index.js' } }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'acme-clarity-like-2.0.1.tgz');
}

// terraform-mcp-server@0.13.0's surface: a tool and a prompt, resources/list refused (-32603), resources/templates/list answered outside the schema.
const TERRAFORM_LIKE = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {}, resources: { subscribe: true, listChanged: true }, prompts: {} }, serverInfo: { name: 'terraform-like', version: '0.13.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'providerDetails', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'pid ' + process.pid } ] } });
  else if (method === 'prompts/list') send({ id, result: { prompts: [{ name: 'migrate-clouds', description: 'Migrates' }] } });
  else if (method === 'resources/list') send({ id, error: { code: -32603, message: "Missing or invalid 'uri' parameter in resources/list request" } });
  else if (method === 'resources/templates/list') send({ id, result: { type: 'success', templates: [] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

// @vibgrate/cli@2026.711.1's shape: one file under two bin names, a CLI that serves MCP with its `serve` command.
const SERVE_COMMAND = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
if (process.argv[2] !== 'serve') {
  console.log('Usage: vg [options] [command]');
  console.log('  serve   Start the local MCP server');
  process.exit(0);
}
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'vg', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'vg_show', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'served by ' + process.argv.slice(2).join(' ') }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

async function packSameFileBins(dir: string): Promise<string> {
  const pkg = join(dir, 'cli-like');
  await mkdir(join(pkg, 'dist'), { recursive: true });
  await writeFile(join(pkg, 'dist', 'cli.js'), SERVE_COMMAND, { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name: '@acme/cli-like', version: '1.0.0', type: 'module', license: 'MIT', bin: { vg: 'dist/cli.js', vibgrate: './dist/cli.js' } }));
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', dir], { cwd: pkg, stdio: 'ignore' });
  return join(dir, 'acme-cli-like-1.0.0.tgz');
}

// mcp-ripgrep@0.4.0's shape: its tool runs a program through the shell and passes the shell's words on as a tool error.
const RUNS_A_PROGRAM = `#!/usr/bin/env node
import { execSync } from 'node:child_process';
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'grep-like', version: '0.4.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'search', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call') {
    try {
      send({ id, result: { content: [{ type: 'text', text: execSync('p9-absent-grep -n x .', { stdio: 'pipe' }).toString() }] } });
    } catch (error) {
      send({ id, result: { isError: true, content: [{ type: 'text', text: 'Error: Command failed with exit code ' + error.status + '\\n' + String(error.stderr) }] } });
    }
  } else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

const failure = (result: { isErr(): boolean; _unsafeUnwrapErr(): HostError }): HostError => {
  expect(result.isErr()).toBe(true);
  return result._unsafeUnwrapErr();
};

describe('published servers, ninth round: fixtures', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let gitkit: string;
  beforeAll(async () => {
    dir = await tempDir('npm-round9-');
    gitkit = await packGitkit(dir.path);
  });
  afterAll(() => dir.dispose());

  it('quotes what a bin that is a CLI printed on stdout before it exited, names the bin that serves MCP, and installs with it (github-mcp-server)', { timeout: SLOW }, async () => {
    const profile = await pool.profile();
    const host = await pool.open(profile, { profileKind: 'standard' });
    const cliStart = failure(await host.install(`npm:${gitkit}`, { canary: false }));
    expect(cliStart.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(cliStart.message).toContain('exited with status 0');
    expect(cliStart.message).toContain('it printed 3 lines on stdout that are not JSON-RPC, the first: 🚀 GitKit - Git Operations CLI');
    expect(cliStart.details['stdout_lines']).toEqual(['🚀 GitKit - Git Operations CLI', '📊 Total: 3 operations', 'gstatus  - Show repository status']);
    // The other bins that run another file: the aliases of the CLI are no way out.
    expect(cliStart.hint).toContain("The package's other bins: 'gitkit-mcp'; name the one that serves MCP with --bin <name>");
    expect(cliStart.hint).not.toContain("'gstatus'");
    expect(cliStart.hint).toContain('--arg mcp');

    const installed = (await host.install(`npm:${gitkit}`, { canary: false, bin: 'gitkit-mcp' }))._unsafeUnwrap();
    expect(installed.plugin.operations.map((o) => o.op_id)).toEqual(['plug.gitkit.git-status']);
    await host.close();
    const again = await pool.open(profile, { profileKind: 'standard' });
    const called = await again.call('plug.gitkit.git-status', {}, { maxRisk: 'destructive' });
    if (called.isErr()) throw new Error(called.error.message);
    expect(JSON.stringify(called.value)).toContain('clean');
  });

  it('installs an npm package whose shipped bundle manifest is named like the package, scope and all, and runs it with its token (@microsoft/clarity-mcp-server)', { timeout: SLOW }, async () => {
    const profile = await pool.profile();
    const host = await pool.open(profile, { profileKind: 'standard' });
    const installed = (await host.install(`npm:${await packClarityLike(dir.path)}`, { canary: false }))._unsafeUnwrap();
    expect(installed.plugin).toMatchObject({ name: 'acme-clarity-like', display_name: 'Acme Clarity', status: 'needs_configuration' });
    expect(installed.plugin.operations.map((o) => o.op_id)).toEqual(['plug.acme-clarity-like.list-session-recordings', 'plug.acme-clarity-like.query-documentation-data']);
    await host.close();
    const again = await pool.open(profile, { profileKind: 'standard' });
    expect((await again.setup('acme-clarity-like', { api_token: 'abcdef' }))._unsafeUnwrap()).toMatchObject({ stored: ['api_token'] });
    const called = await again.call('plug.acme-clarity-like.query-documentation-data', {}, { maxRisk: 'destructive' });
    if (called.isErr()) throw new Error(called.error.message);
    expect(JSON.stringify(called.value)).toContain('token of 6 characters');
  });

  it('fails a listing answered outside the MCP schema alone, without quarantining the plugin or stopping its process (terraform-mcp-server)', { timeout: SLOW }, async () => {
    const profile = await pool.profile();
    const installer = await pool.open(profile, { profileKind: 'standard' });
    (await installer.install(`npm:${await packServer(dir.path, { name: 'terraform-like', source: TERRAFORM_LIKE })}`, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const host = await pool.open(profile, { profileKind: 'standard' });
    const first = await host.call('plug.terraform-like.providerDetails', {}, { maxRisk: 'destructive' });
    if (first.isErr()) throw new Error(first.error.message);
    const templates = failure(await host.resourceTemplates('terraform-like'));
    expect(templates).toMatchObject({ code: 'PLUGIN_MALFORMED_RESPONSE', details: { phase: 'resources/templates/list' } });
    expect(failure(await host.resources('terraform-like')).code).toBe('PLUGIN_INTERNAL_ERROR');
    // Its tools and prompts still answer, from the same process.
    const prompts = await host.prompts('terraform-like');
    if (prompts.isErr()) throw new Error(prompts.error.message);
    expect(prompts.value.map((p) => p.name)).toEqual(['migrate-clouds']);
    const second = await host.call('plug.terraform-like.providerDetails', {}, { maxRisk: 'destructive' });
    if (second.isErr()) throw new Error(second.error.message);
    expect(JSON.stringify(second.value)).toBe(JSON.stringify(first.value));
    expect((await host.info('terraform-like'))._unsafeUnwrap().status).toBe('active');
  });

  it('runs a package whose bins all name one file, with its serve command; without it, quotes the usage it printed (@vibgrate/cli)', { timeout: SLOW }, async () => {
    const tarball = await packSameFileBins(dir.path);
    const profile = await pool.profile();
    const host = await pool.open(profile, { profileKind: 'standard' });
    const usage = failure(await host.install(`npm:${tarball}`, { canary: false }));
    expect(usage.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(usage.message).toContain('the first: Usage: vg [options] [command]');
    // Its two bins are one file: no other bin to name.
    expect(usage.hint).not.toContain("other bins");
    expect(usage.hint).toContain('--arg mcp');
    const installed = (await host.install(`npm:${tarball}`, { canary: false, args: ['serve'] }))._unsafeUnwrap();
    expect(installed.plugin.executable.path).toMatch(/dist\/cli\.js$/);
    await host.close();
    const again = await pool.open(profile, { profileKind: 'standard' });
    const called = await again.call('plug.cli-like.vg_show', {}, { maxRisk: 'destructive' });
    if (called.isErr()) throw new Error(called.error.message);
    expect(JSON.stringify(called.value)).toContain('served by serve');
  });

  it('says a program the server runs is not on its PATH (mcp-ripgrep without rg)', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    (await host.install(`npm:${await packServer(dir.path, { name: 'grep-like', source: RUNS_A_PROGRAM })}`, { canary: false }))._unsafeUnwrap();
    const error = failure(await host.call('plug.grep-like.search', {}, { maxRisk: 'destructive' }));
    expect(error.code).toBe('PLUGIN_TOOL_ERROR');
    expect(JSON.stringify(error.details['result'])).toMatch(/sh: \d+: p9-absent-grep: not found/);
    expect(error.hint.startsWith("The plugin runs a program, 'p9-absent-grep', that its sandbox does not find")).toBe(true);
    expect(error.hint).toContain('/usr/local/bin, /usr/bin, /bin');
  });

  it('redacts a granted value the CLI printed on stdout, in the message and in details.stdout_lines', { timeout: SLOW }, async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: { ...process.env, GITKIT_TOKEN: TOKEN_VALUE } });
    const printed = failure(await host.install(`npm:${gitkit}`, { canary: false, grant: { network: false, fs_write_dir: '', env_allow: ['GITKIT_TOKEN'] } }));
    expect(printed.code).toBe('PLUGIN_HANDSHAKE_FAILED');
    expect(printed.message).toContain('it printed 4 lines on stdout that are not JSON-RPC, the first: config: token=');
    expect((printed.details['stdout_lines'] as string[])[0]).toMatch(/^config: token=/);
    expect(JSON.stringify({ message: printed.message, details: printed.details, hint: printed.hint })).not.toContain(TOKEN_VALUE);
  });
});
