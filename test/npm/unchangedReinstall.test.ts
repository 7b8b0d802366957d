/**
 * An `npm:` server given again with exactly the installed files, under the
 * same grant, is answered from the install's record of its tools/list: no
 * introspection start runs. The server here names a fresh random number in
 * its tool's description at every start, so a start would generate another
 * manifest (and the same version from "other bytes" would be refused);
 * under another grant it is introspected again. Real npm pack, real
 * sandboxed starts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HostPool, jsonOf } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const SLOW = 180_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());

/** A server whose one tool's description differs at every start. */
const CHANGING_SERVER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const started = String(Math.random());
const tools = [{ name: 'hello', description: 'Started as ' + started, inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  let message;
  try { message = JSON.parse(line); } catch { return; }
  if (message.id === undefined) return;
  const { id, method, params } = message;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'changing-npm', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: started }] } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('an unchanged npm reinstall', () => {
  it('is answered from the recorded tool list without starting the server, and starts it again under another grant', { timeout: SLOW }, async () => {
    const work = await pool.profile();
    const tarball = await packServer(work, { name: 'changing-npm', source: CHANGING_SERVER });
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard' });
    const first = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrap();
    expect(first.unchanged).toBeUndefined();
    const listed = (await host.info('changing-npm'))._unsafeUnwrap();

    // A start would list another description: the same version from other bytes, refused (PLUGIN_ALREADY_INSTALLED).
    const again = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrap();
    expect(again.unchanged).toBe(true);
    expect((await host.info('changing-npm'))._unsafeUnwrap()).toEqual(listed);

    // Another grant is another introspection start (its env and network may change what the server lists).
    const regranted = await host.install(`npm:${tarball}`, { canary: false, grant: { network: true } });
    expect(regranted._unsafeUnwrapErr().code).toBe('PLUGIN_ALREADY_INSTALLED');
    // So are other arguments (they may change what the server lists).
    const reargued = await host.install(`npm:${tarball}`, { canary: false, args: ['--read-only'] });
    expect(reargued._unsafeUnwrapErr().code).toBe('PLUGIN_ALREADY_INSTALLED');
  });

  it('runs the server with the arguments of a reinstall that changes only them', { timeout: SLOW }, async () => {
    const work = await pool.profile();
    const tarball = await packServer(work, { name: 'argv-npm', source: ARGV_SERVER });
    const dir = await pool.profile();
    const argvOfServer = async (): Promise<unknown> => {
      const host = await pool.open(dir, { profileKind: 'standard' });
      const answer = jsonOf((await host.call('plug.argv-npm.argv', {}, { maxRisk: 'destructive' }))._unsafeUnwrap());
      await host.close();
      return answer;
    };
    const installer = await pool.open(dir, { profileKind: 'standard' });
    (await installer.install(`npm:${tarball}`, { canary: false, args: ['--first'] }))._unsafeUnwrap();
    expect(await argvOfServer()).toEqual(['--first']);
    const again = (await installer.install(`npm:${tarball}`, { canary: false, args: ['--second'] }))._unsafeUnwrap();
    expect(again.unchanged).toBeUndefined();
    expect(await argvOfServer()).toEqual(['--second']);
    expect((await installer.install(`npm:${tarball}`, { canary: false, args: ['--second'] }))._unsafeUnwrap().unchanged).toBe(true);
  });
});

/** A server whose one tool answers with the arguments it was started with. */
const ARGV_SERVER = CHANGING_SERVER.replace("const started = String(Math.random());", "const started = JSON.stringify(process.argv.slice(2));")
  .replace("'Started as ' + started", "'Answers its arguments'")
  .replaceAll("'hello'", "'argv'");
