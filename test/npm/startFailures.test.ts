/**
 * What published servers that do not start in the introspection sandbox, or
 * that share a generic unscoped name, get from an `npm:` install (found by
 * installing real published servers: mcp-server-sqlite-npx, whose sqlite3
 * addon is built by an install script; @benborla29/mcp-server-mysql, which
 * exits 1 silently without a database; @playwright/mcp and @azure/mcp, both
 * named `mcp`). The packages here are packed locally with `npm pack` so the
 * cases need no registry.
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packGreeterServer, packServer } from './npmPack.js';
import { pluginIdOf } from '../../src/installer/npmManifest.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const NPM_TIMEOUT = { timeout: 120_000 };

// Answers initialize; `exitAfterInitialize` then exits with status 1 on `notifications/initialized`, printing nothing.
const serverSource = (options: { readonly importFirst?: string; readonly exitAfterInitialize?: boolean }): string => `#!/usr/bin/env node
${options.importFirst === undefined ? '' : `import '${options.importFirst}';`}
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (method === 'notifications/initialized' && ${String(options.exitAfterInitialize === true)}) process.exit(1);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools: [{ name: 'ping', inputSchema: { type: 'object' } }] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: 'pong' }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: servers that do not start in the introspection sandbox', NPM_TIMEOUT, () => {
  it('names the packages whose install scripts never ran when the server fails without their output', async () => {
    const work = await pool.profile();
    // Its install script would build the module the server imports first, as node-gyp builds an addon.
    const tarball = await packServer(work, {
      name: 'addon-server',
      source: serverSource({ importFirst: './addon.mjs' }),
      scripts: { install: "node -e \"require('fs').writeFileSync('bin/addon.mjs', '')\"" },
    });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', skipped_install_scripts: ['addon-server'] } });
    expect(error.hint).toContain('install scripts, which never run here: addon-server');
    expect(String(error.details['stderr_tail'])).toContain('addon.mjs');
  });

  it('says how a server that closes its stdout without a word ended', async () => {
    const work = await pool.profile();
    const tarball = await packServer(work, { name: 'silent-exit', source: serverSource({ exitAfterInitialize: true }) });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.wrap(`npm:${tarball}`))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', stderr_tail: '', exit: 'exited with status 1' } });
    expect(error.message).toContain('the server closed its stdout before answering (exited with status 1); it wrote nothing on stderr');
  });

  it('says a server that connects while it starts cannot list its tools offline, and what installs it', async () => {
    // As mcp-remote (a proxy to a remote server) and @modelcontextprotocol/server-redis do: connect first, print the error, give up.
    const connecting = `#!/usr/bin/env node
import { connect } from 'node:net';
connect(6379, '127.0.0.1').on('connect', () => process.exit(0)).on('error', (error) => {
  process.stderr.write('Connection error: ' + error.message + '\\n');
  process.exit(1);
});
`;
    const tarball = await packServer(await pool.profile(), { name: 'connecting', source: connecting });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1' } });
    expect(error.hint).toMatch(
      /^Its stderr reads like a network failure: the introspection start has no network unless the install grants it, .* \(CLI --grant-network, or --grant-egress host:port\), which the start then gets too, or with a manifest that lists its tools \(the manifest install option, CLI --manifest <file>\)\. /,
    );
  });

  it('ends at once, saying what the line was, when the answer breaks JSON-RPC', async () => {
    // An envelope member JSON-RPC does not have: the SDK's schema refuses the whole line, so the answer never arrives.
    const broken = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (method !== 'initialize') return;
  const result = { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'broken', version: '1.0.0' } };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result, server_time: 1 }) + '\\n');
});
`;
    const tarball = await packServer(await pool.profile(), { name: 'broken-envelope', source: broken });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection' } });
    expect(error.message).toMatch(/^introspecting the server failed: plugin wrote JSON on stdout that is not a JSON-RPC 2\.0 message: \{"jsonrpc":"2\.0","id":0,.*"server_time":1\}$/);
  });

  it('keeps a running server whose install scripts were skipped, and says so in its risk', async () => {
    const work = await pool.profile();
    const tarball = await packGreeterServer(work, join(work, 'scripts-ran'));
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate' });
    expect((await host.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
    expect((await host.info('greeter-npm'))._unsafeUnwrap().risk).toMatch(/^needs_review: .* install scripts, which never run here: greeter-npm\./);
  });
});

describe('npm: plugin ids of scoped packages with generic names', NPM_TIMEOUT, () => {
  it('keeps the scope of a name made only of generic words, and only there', () => {
    expect(pluginIdOf('@vibgrate/cli')).toBe('vibgrate-cli');
    expect(pluginIdOf('@acme/mcp-tools')).toBe('acme-mcp-tools');
    expect(pluginIdOf('@acme/stdio-server')).toBe('acme-stdio-server');
    expect(pluginIdOf('@acme/weather-cli')).toBe('weather-cli');
    expect(pluginIdOf('cli')).toBe('cli');
  });

  it('installs @acme/mcp and @zeta/mcp side by side as acme-mcp and zeta-mcp', async () => {
    const work = await pool.profile();
    const acme = await packServer(work, { name: '@acme/mcp', source: serverSource({}) });
    const zeta = await packServer(work, { name: '@zeta/mcp', source: serverSource({}) });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', activation: 'immediate' });
    for (const tarball of [acme, zeta]) {
      const installed = await host.install(`npm:${tarball}`, { canary: false });
      expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    }
    expect((await host.list())._unsafeUnwrap().map((row) => row.name).sort()).toEqual(['acme-mcp', 'zeta-mcp']);
    expect(textOf((await host.call('plug.zeta-mcp.ping', {}, { maxRisk: 'destructive' }))._unsafeUnwrap())).toBe('pong');
  });
});
