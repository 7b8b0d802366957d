/**
 * A denylisted env name a user grants on purpose (PERPLEXITY_API_KEY, which
 * @perplexity-ai/mcp-server reads): the grant is refused at install, before
 * the server starts, with the contract's canonical message and a hint naming
 * the way that works; a credential the user stores for the plugin under that
 * name reaches it (and is redacted as a credential), the host's own value of
 * the name never does, and a seed name (OPENAI_API_KEY) never reaches a
 * plugin from any source. Real host, real sandboxed plugin processes.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EnvDenylist, isStoredOnlyCredentialName, prohibitedEnvMessage } from '../../src/env/EnvDenylist.js';
import { HostPool, textOf } from '../support/hostHarness.js';
import { bundleDirectory } from '../support/mcpbBundles.js';
import { packServer, TOKEN_SERVER } from '../npm/npmPack.js';

const pool = new HostPool();
const dirs: string[] = [];
afterEach(() => pool.cleanup());
afterAll(async () => {
  await pool.cleanup();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const STORED = 'pplx-stored-4b7e19c2aa';
const HOST_VALUE = 'pplx-host-91d0f3e6bb';
const HOST_OPENAI = 'sk-host-openai-5c2a8e';
const sha = (value: string): string => createHash('sha256').update(value).digest('hex');
const hostEnv = { ...process.env, PERPLEXITY_API_KEY: HOST_VALUE, OPENAI_API_KEY: HOST_OPENAI };

// A tiny MCP server over stdio: `env` reports whether PERPLEXITY_API_KEY and OPENAI_API_KEY reached it (the value's
// SHA-256, never the value), `leak` prints the key to stderr and exits.
const SERVER = `#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
const seen = (name) => (process.env[name] === undefined ? null : createHash('sha256').update(process.env[name]).digest('hex'));
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'keyed', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'env', inputSchema: { type: 'object' } }, { name: 'leak', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call' && params.name === 'leak') { process.stderr.write('calling with key ' + process.env.PERPLEXITY_API_KEY + '\\n', () => process.exit(1)); }
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: JSON.stringify({ perplexity: seen('PERPLEXITY_API_KEY'), openai: seen('OPENAI_API_KEY') }) }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

// Connects to 127.0.0.1:<argv[2]> at start, then serves one tool; exits 1 when it cannot connect.
const DIALING_SERVER = `#!/usr/bin/env node
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
const service = connect(Number(process.argv[2]), '127.0.0.1');
service.on('error', () => process.exit(1));
service.once('connect', () => {
  const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
  createInterface({ input: process.stdin }).on('line', (line) => {
    const { id, method, params } = JSON.parse(line);
    if (id === undefined) return;
    if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'dialing', version: '1.0.0' } } });
    else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'dial', inputSchema: { type: 'object' } }] } });
    else send({ id, error: { code: -32601, message: 'no ' + method } });
  });
});
`;

/** A TCP service on loopback that counts the connections made to it. */
async function loopbackService(): Promise<{ port: number; count: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, count: () => connections, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** An MCP Bundle whose server makes its tools at run time, so the install starts it to list them. */
async function dialingBundle(port: number): Promise<string> {
  const dir = await bundleDirectory({
    manifest_version: '0.3',
    name: 'dialing_bundle',
    version: '1.0.0',
    description: 'A bundle whose server connects at start',
    author: { name: 'Tests' },
    server: { type: 'node', entry_point: 'server/dialing.mjs', mcp_config: { command: 'node', args: ['${__dirname}/server/dialing.mjs', String(port)] } },
    tools: [{ name: 'placeholder' }],
    tools_generated: true,
  });
  dirs.push(dir);
  await mkdir(join(dir, 'server'));
  await writeFile(join(dir, 'server/dialing.mjs'), DIALING_SERVER);
  return dir;
}

/** A GUM JSON manifest of the keyed server at `executable`, declaring `creds` as needs_user_creds (one descriptor each) and `envAllow`. */
function keyedManifest(pluginId: string, executable: string, creds: readonly string[], envAllow: readonly string[] = []): Record<string, unknown> {
  return {
    manifest_schema_version: 1,
    plugin_id: pluginId,
    name: 'Keyed',
    version: '1.0.0',
    namespace_owner: 'io.example.keyed',
    shape: 'mcp-plugin',
    executable,
    advertised_tools: [
      { name: 'env', description: 'Reports which keys reached it', risk_class: 'read' },
      { name: 'leak', description: 'Prints its key to stderr and exits', risk_class: 'read' },
    ],
    declared_capabilities: { network: false, fs_write_dir: '', env_allow: envAllow },
    requirements: {
      needs_user_creds: creds,
      credential_descriptors: creds.map((env) => ({ alias: env.toLowerCase().replaceAll('_', '-'), env, kind: 'api_key', display_name: env, setup_hint: 'From the service settings' })),
    },
  };
}

/** A plugin directory holding the keyed server and its {@link keyedManifest}. */
async function keyedPlugin(creds: readonly string[], envAllow: readonly string[] = []): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'keyed-plugin-'));
  dirs.push(dir);
  await mkdir(join(dir, 'bin'));
  await writeFile(join(dir, 'bin', 'keyed.mjs'), SERVER, { mode: 0o755 });
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(keyedManifest('keyed', 'bin/keyed.mjs', creds, envAllow)));
  return dir;
}

describe('a denylisted env name granted on purpose', { timeout: 120_000 }, () => {
  it('refuses --grant-env PERPLEXITY_API_KEY on an npm server at install, before it starts, with the canonical message and a hint to store it', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: { ...hostEnv, TOKEN: 't' } });
    const error = (await host.install(`npm:${tarball}`, { canary: false, grant: { env_allow: ['TOKEN', 'PERPLEXITY_API_KEY'] } }))._unsafeUnwrapErr();
    // The old code started the server without the name (dropped) and refused only after, naming the staged manifest.
    expect(error.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(error.message).toBe(prohibitedEnvMessage('env_allow', 'PERPLEXITY_API_KEY', `npm:${tarball}`));
    expect(error.details).toMatchObject({ pointer: '/grant/env_allow', field: 'env_allow' });
    expect(error.details).not.toHaveProperty('stderr_tail');
    expect(error.hint).toContain('requirements.needs_user_creds');
    // The tarball's plugin id is not known before it is read: the hint names no source as a plugin.
    expect(error.hint).toContain('`setup <plugin>`');
    expect(error.hint).not.toContain('--grant-env NAME');
    expect((await host.list())._unsafeUnwrap()).toEqual([]);
  });

  it('names the registry package\'s plugin id, and refuses a seed name without pointing at a stored credential', async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: hostEnv });
    const error = (await host.install('npm:@perplexity-ai/mcp-server@0.1.0', { canary: false, grant: { env_allow: ['OPENAI_API_KEY'] } }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(error.message).toBe("PLUGIN_ENV_PROHIBITED: env_allow entry 'OPENAI_API_KEY' on plugin 'perplexity-ai-mcp-server' is a prohibited env var name.");
    expect(error.hint).toContain('no plugin ever receives it');
    expect(error.hint).not.toContain('setup');
  });

  it('refuses the grant on an npm server and on an MCP Bundle before either starts (each would connect to a loopback service at start)', async () => {
    const starts = await loopbackService();
    try {
      const tarball = await packServer(await pool.profile(), { name: 'dialing-server', source: DIALING_SERVER });
      const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: hostEnv });
      const grant = { network: true, env_allow: ['PERPLEXITY_API_KEY'] };
      // The same server connects when nothing denylisted is granted: the count proves a start.
      expect((await host.install(`npm:${tarball}`, { canary: false, args: [String(starts.port)], grant: { network: true } })).isOk()).toBe(true);
      const connected = starts.count();
      expect(connected).toBeGreaterThan(0);
      const npm = (await host.install(`npm:${tarball}`, { canary: false, args: [String(starts.port)], grant }))._unsafeUnwrapErr();
      expect(npm).toMatchObject({ code: 'PLUGIN_ENV_PROHIBITED', details: { pointer: '/grant/env_allow' } });
      // A bundle directory installs into a dev profile.
      const dev = await pool.open(await pool.profile(), { env: hostEnv });
      const bundle = (await dev.install(await dialingBundle(starts.port), { canary: false, grant }))._unsafeUnwrapErr();
      expect(bundle.code).toBe('PLUGIN_ENV_PROHIBITED');
      expect(bundle.message).toBe(prohibitedEnvMessage('env_allow', 'PERPLEXITY_API_KEY', 'dialing-bundle'));
      expect(bundle.hint).toContain('setup dialing-bundle');
      expect(starts.count()).toBe(connected);
    } finally {
      await starts.close();
    }
  });

  it('refuses a manifest that declares PERPLEXITY_API_KEY in env_allow, before it runs', async () => {
    const host = await pool.open(await pool.profile(), { env: hostEnv });
    const error = (await host.install(await keyedPlugin([], ['PERPLEXITY_API_KEY']), { canary: false }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(error.message).toContain(prohibitedEnvMessage('env_allow', 'PERPLEXITY_API_KEY', 'keyed'));
  });

  it('gives the plugin the PERPLEXITY_API_KEY its user stored for it, never the host\'s own value, and redacts it as a credential', async () => {
    // credentialsFromEnv: the host's value of an ordinary credential name would win over the stored one.
    const host = await pool.open(await pool.profile(), { env: hostEnv, credentialsFromEnv: true, activation: 'immediate' });
    const installed = (await host.install(await keyedPlugin(['PERPLEXITY_API_KEY']), { canary: false }))._unsafeUnwrap();
    // The host's environment sets the name: it is not the plugin's, so the plugin still needs configuration.
    expect(installed.plugin.status).toBe('needs_configuration');
    expect((await host.call('plug.keyed.env', {}))._unsafeUnwrapErr().code).toBe('PLUGIN_NEEDS_CONFIGURATION');
    expect((await host.setup('keyed', { 'perplexity-api-key': STORED })).isOk()).toBe(true);
    const seen = JSON.parse(textOf((await host.call('plug.keyed.env', {}))._unsafeUnwrap())) as { perplexity: string | null; openai: string | null };
    expect(seen).toEqual({ perplexity: sha(STORED), openai: null });
    const leaked = (await host.call('plug.keyed.leak', {}))._unsafeUnwrapErr();
    const text = JSON.stringify({ message: leaked.message, details: leaked.details, hint: leaked.hint });
    expect(text).toContain('calling with key [redacted]');
    expect(text).not.toContain(STORED);
  });

  it('gives an npm server installed with a manifest declaring PERPLEXITY_API_KEY the key its user stored, as the hint says', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'pplx-like', source: SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: hostEnv, activation: 'immediate' });
    const installed = await host.install(`npm:${tarball}`, { canary: false, manifest: keyedManifest('pplx-like', 'bin/server.mjs', ['PERPLEXITY_API_KEY']) });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    expect((await host.setup('pplx-like', { 'perplexity-api-key': STORED })).isOk()).toBe(true);
    const seen = JSON.parse(textOf((await host.call('plug.pplx-like.env', {}))._unsafeUnwrap())) as { perplexity: string | null; openai: string | null };
    expect(seen).toEqual({ perplexity: sha(STORED), openai: null });
  });

  it('never lets OPENAI_API_KEY through as a stored credential: refused at install', async () => {
    const host = await pool.open(await pool.profile(), { env: hostEnv });
    const error = (await host.install(await keyedPlugin(['OPENAI_API_KEY']), { canary: false }))._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(error.message).toContain(prohibitedEnvMessage('needs_user_creds', 'OPENAI_API_KEY', 'keyed'));
  });

  it('builds no environment with OPENAI_API_KEY or a loader name, even handed in as a credential', () => {
    const env = new EnvDenylist()
      .buildEnv({
        parentEnv: hostEnv,
        envAllow: ['PERPLEXITY_API_KEY', 'OPENAI_API_KEY'],
        credentials: { OPENAI_API_KEY: 'sk-stored', NODE_OPTIONS: '--require /tmp/x.js', PERPLEXITY_API_KEY: STORED },
      })
      ._unsafeUnwrap();
    expect(env).not.toHaveProperty('OPENAI_API_KEY');
    expect(env).not.toHaveProperty('NODE_OPTIONS');
    expect(env.PERPLEXITY_API_KEY).toBe(STORED);
    // Granted from the host environment, without a stored value: scrubbed.
    expect(new EnvDenylist().buildEnv({ parentEnv: hostEnv, envAllow: ['PERPLEXITY_API_KEY'] })._unsafeUnwrap()).not.toHaveProperty('PERPLEXITY_API_KEY');
  });

  it('keeps the seed names, loader names and a host\'s own additions off the storable list', () => {
    for (const name of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'NODE_OPTIONS', 'LD_PRELOAD', 'SSH_AUTH_SOCK', 'AWS_SHARED_CREDENTIALS_FILE', 'GUM_TOKEN']) {
      expect(isStoredOnlyCredentialName(name), name).toBe(false);
      expect(new EnvDenylist().check('p', [name], 'needs_user_creds').isErr(), name).toBe(true);
    }
    expect(new EnvDenylist().check('p', ['PERPLEXITY_API_KEY', 'GITHUB_TOKEN'], 'needs_user_creds').isOk()).toBe(true);
    expect(new EnvDenylist().check('p', ['PERPLEXITY_API_KEY'], 'env_allow').isErr()).toBe(true);
    const strict = new EnvDenylist({ extraExact: ['PERPLEXITY_API_KEY'], extraPrefixes: ['GITHUB_'] });
    expect(strict.check('p', ['PERPLEXITY_API_KEY'], 'needs_user_creds').isErr()).toBe(true);
    expect(strict.check('p', ['GITHUB_TOKEN'], 'needs_user_creds').isErr()).toBe(true);
    expect(strict.buildEnv({ parentEnv: {}, credentials: { PERPLEXITY_API_KEY: STORED } })._unsafeUnwrap()).not.toHaveProperty('PERPLEXITY_API_KEY');
  });
});
