/**
 * A host that requires a LICENSE file (requireLicense, the `gum` preset's
 * default) refuses a package without one before its introspection start:
 * whether the file is there needs no tool list, and the server of an npm
 * package (or an MCP Bundle) that ships no manifest ran, with the network the
 * install granted, before the install refused it `PLUGIN_LICENSE_MISSING`
 * (review R12 F5). A real install of a packed npm tarball, a real sandboxed
 * start; the start leaves its marker by connecting to a listener of the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bundledNpmCli } from '../../src/installer/npmFetch.js';
import { HostPool } from '../support/hostHarness.js';

const pool = new HostPool();
let base: string;
let marker: Server;
let markers = 0;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'license-start-'));
  marker = createServer((socket) => {
    markers++;
    socket.end('marked_tool\n');
  });
  await new Promise<void>((listening) => marker.listen(0, '127.0.0.1', listening));
});
afterEach(() => pool.cleanup());
afterAll(async () => {
  await pool.cleanup();
  await new Promise((closed) => marker.close(closed));
  await rm(base, { recursive: true, force: true });
});

/** An MCP server that first connects to the marker listener and lists the tool it names (exit 1 when it cannot). */
const serverSource = (port: number): string => `#!/usr/bin/env node
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
const serve = (tool) => {
  const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
  createInterface({ input: process.stdin }).on('line', (line) => {
    const { id, method, params } = JSON.parse(line);
    if (id === undefined) return;
    if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'license-start', version: '1.0.0' } } });
    else if (method === 'tools/list') send({ id, result: { tools: [{ name: tool, inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }] } });
    else send({ id, error: { code: -32601, message: 'no ' + method } });
  });
};
const service = connect(${port}, '127.0.0.1');
service.on('error', (error) => { process.stderr.write('cannot reach the marker: ' + error.message + '\\n'); process.exit(1); });
service.once('data', (chunk) => serve(String(chunk).trim()));
`;

/** `name`@1.0.0 packed by npm, with no manifest (the host introspects it), with or without a LICENSE file. */
async function pack(name: string, license: boolean): Promise<string> {
  const pkg = join(await mkdtemp(join(base, 'pack-')), name);
  await mkdir(join(pkg, 'bin'), { recursive: true });
  await writeFile(join(pkg, 'bin', 'server.mjs'), serverSource((marker.address() as AddressInfo).port), { mode: 0o755 });
  await writeFile(join(pkg, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', license: 'MIT', bin: { [name]: 'bin/server.mjs' } }));
  if (license) await writeFile(join(pkg, 'LICENSE'), 'MIT License\n');
  execFileSync(process.execPath, [bundledNpmCli(), 'pack', '--ignore-scripts', '--pack-destination', join(pkg, '..')], { cwd: pkg, stdio: 'ignore' });
  return join(pkg, '..', `${name}-1.0.0.tgz`);
}

describe('a package without the LICENSE file the host requires', { timeout: 300_000 }, () => {
  it('is refused before its introspection start, asked or not; with the file it starts and installs', async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', requireLicense: true });
    const unlicensed = `npm:${await pack('license-start-none', false)}`;
    const before = markers;
    const unasked = (await host.install(unlicensed, { canary: false, grant: { network: true } }))._unsafeUnwrapErr();
    expect(unasked).toMatchObject({ code: 'PLUGIN_LICENSE_MISSING', details: { plugin_id: 'license-start-none', source: 'npm' } });
    const asked = (await host.install(unlicensed, { canary: false, grant: { network: true }, accept: () => true }))._unsafeUnwrapErr();
    expect(asked).toMatchObject({ code: 'PLUGIN_LICENSE_MISSING' });
    expect(markers).toBe(before);
    // The control: the same server with a LICENSE file is started (it reached the marker) and installed.
    const licensed = await host.install(`npm:${await pack('license-start-some', true)}`, { canary: false, grant: { network: true }, accept: () => true });
    expect(licensed.isOk(), JSON.stringify(licensed)).toBe(true);
    expect(markers).toBeGreaterThan(before);
  });
});
