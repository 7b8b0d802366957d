/**
 * A published server that exits at start without its token (as
 * @modelcontextprotocol/server-slack does without SLACK_BOT_TOKEN) installs
 * when the install grants the env name and the host environment sets it: the
 * granted names, and no other host env, reach its sandboxed introspection
 * start; a denylisted name never does; the value is written nowhere.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';
import { packServer, TOKEN_SERVER } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

const NPM_TIMEOUT = { timeout: 120_000 };
const TOKEN_VALUE = 'tok-4f9c1e-granted-value';

const hostEnv = { ...process.env, TOKEN: TOKEN_VALUE, NODE_OPTIONS: '--no-warnings', LD_PRELOAD: '/nonexistent/preload.so', UNGRANTED_SECRET: 'not-granted' };

async function filesHolding(dir: string, text: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const holding: string[] = [];
  for (const entry of entries.filter((e) => e.isFile())) {
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(text)) holding.push(path);
  }
  return holding;
}

describe('npm: a server that needs a token to start', NPM_TIMEOUT, () => {
  it('installs when the install grants its env name and the host sets it, and its tool answers', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const dir = await pool.profile();
    const host = await pool.open(dir, { profileKind: 'standard', activation: 'immediate', env: hostEnv });
    const installed = await host.install(`npm:${tarball}`, { canary: false, grant: { network: false, fs_write_dir: '', env_allow: ['TOKEN'] } });
    expect(installed.isOk(), JSON.stringify(installed.isErr() ? installed.error : null)).toBe(true);
    const called = await host.call('plug.token-server.whoami', {}, { maxRisk: 'destructive' });
    expect(textOf(called._unsafeUnwrap())).toBe(`token of ${TOKEN_VALUE.length} characters`);
    // Closed first: the host writes the plugin's tool list in the background after the call (a temporary file, renamed).
    await host.close();
    // The generated manifest, the lock, the catalog and the tool list name the grant, never its value.
    expect(await filesHolding(dir, TOKEN_VALUE)).toEqual([]);
  });

  it('fails without the grant as before, and the hint says to grant the env name', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: hostEnv });
    const error = (await host.install(`npm:${tarball}`, { canary: false }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', stderr_tail: 'TOKEN is not set\n' } });
    expect(error.hint).toContain('--grant-env NAME');
  });

  it('refuses a denylisted name granted to wrap before npm runs, as install does; the allowed names alone start it', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: hostEnv });
    const refused = (await host.wrap(`npm:${tarball}`, { env: ['TOKEN', 'NODE_OPTIONS', 'LD_PRELOAD'] }))._unsafeUnwrapErr();
    expect(refused).toMatchObject({ code: 'PLUGIN_ENV_PROHIBITED', details: { pointer: '/grant/env_allow' } });
    expect(refused.message).toContain("env_allow entry 'NODE_OPTIONS'");
    expect(refused.message).toContain("env_allow entry 'LD_PRELOAD'");
    const wrapped = await host.wrap(`npm:${tarball}`, { env: ['TOKEN'] });
    expect(wrapped.isOk(), JSON.stringify(wrapped.isErr() ? wrapped.error : null)).toBe(true);
    expect(wrapped._unsafeUnwrap().manifestText).toContain('"whoami"');
    expect(wrapped._unsafeUnwrap().manifestText).not.toContain(TOKEN_VALUE);
  });

  it('keeps the granted value out of the error of a start that fails', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', env: hostEnv });
    const error = (await host.wrap(`npm:${tarball}`, { env: ['TOKEN'], args: ['--fail'] }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', stderr_tail: 'starting with token [redacted], then failing\n' } });
    expect(JSON.stringify({ message: error.message, details: error.details, hint: error.hint })).not.toContain(TOKEN_VALUE);
  });

  it('keeps the granted value out of a stderr tail that begins inside it, and its JSON-escaped and percent-encoded copies too; a value under 4 characters is kept', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'token-server', source: TOKEN_SERVER });
    const token = 'tok "4f9c/1e" granted value';
    const forms = [token.slice(4), JSON.stringify(token).slice(1, -1), encodeURIComponent(token)];
    const noisy = await pool.open(await pool.profile(), { profileKind: 'standard', env: { ...hostEnv, TOKEN: token } });
    const error = (await noisy.wrap(`npm:${tarball}`, { env: ['TOKEN'], args: ['--fail-after-noise'] }))._unsafeUnwrapErr();
    const tail = String((error.details as { stderr_tail?: unknown }).stderr_tail);
    expect(tail).toContain('config {"token":"[redacted]"}\nurl https://example.com/?t=[redacted]\nthen failing\n');
    for (const form of forms) expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(form);
    const oneLine = (await noisy.wrap(`npm:${tarball}`, { env: ['TOKEN'], args: ['--fail-one-line'] }))._unsafeUnwrapErr();
    expect(String((oneLine.details as { stderr_tail?: unknown }).stderr_tail)).toMatch(/^\[redacted\]n+$/);
    const short = await pool.open(await pool.profile(), { profileKind: 'standard', env: { ...hostEnv, TOKEN: 'in' } });
    const shortError = (await short.wrap(`npm:${tarball}`, { env: ['TOKEN'], args: ['--fail'] }))._unsafeUnwrapErr();
    expect(shortError.details).toMatchObject({ stderr_tail: 'starting with token in, then failing\n' });
  });
});
