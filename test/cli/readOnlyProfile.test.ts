/**
 * A command that only reads (list, info, tools, run) on a profile whose
 * directory does not exist creates nothing: list reports an empty profile
 * (`profile_exists: false`), the others PLUGIN_NOT_FOUND with a hint naming
 * where the CLI looked. Real CLI processes, for --profile-dir and for the
 * default location under XDG_DATA_HOME.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PluginHost } from '../../src/index.js';
import { cli, json, tempDir } from './cliHarness.js';

const SLOW = { timeout: 120_000 };
let work: { readonly path: string; dispose(): Promise<void> };
beforeAll(async () => {
  work = await tempDir('cli-read-only-');
});
afterAll(() => work.dispose());

describe('read-only commands on a profile that does not exist', () => {
  it('list reports an empty profile and makes no directory', SLOW, async () => {
    const dir = join(work.path, 'nowhere', 'profile');
    const listed = await cli(['list', '--profile-dir', dir, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(json(listed)).toEqual({ ok: true, profile: 'default', profile_dir: dir, profile_exists: false, plugins: [] });
    const text = await cli(['list', '--profile-dir', dir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`no plugins installed in profile default (${dir} does not exist)`);
    expect(existsSync(join(work.path, 'nowhere'))).toBe(false);
  });

  it('info, tools and run fail with PLUGIN_NOT_FOUND naming the missing directory, and make none', SLOW, async () => {
    const dir = join(work.path, 'absent');
    for (const args of [['info', 'hello'], ['tools', 'hello'], ['run', 'hello', 'hello', '{}']]) {
      const run = await cli([...args, '--profile-dir', dir, '--json']);
      expect(run.code, args.join(' ')).toBe(1);
      expect(json(run)).toMatchObject({ ok: false, error: { code: 'PLUGIN_NOT_FOUND', details: { plugin_id: 'hello', profile_dir: dir, profile_exists: false } } });
      expect(JSON.stringify(json(run))).toContain('does not create it');
    }
    expect(existsSync(dir)).toBe(false);
  });

  it('the default location (XDG_DATA_HOME/<app>/<profile>) is not made by list either', SLOW, async () => {
    const data = join(work.path, 'xdg');
    const env = { XDG_DATA_HOME: data };
    const listed = await cli(['list', '--profile', 'scratch', '--json'], { env });
    expect(json(listed)).toMatchObject({ ok: true, profile: 'scratch', profile_dir: join(data, 'mcp-plugin-host', 'scratch'), profile_exists: false });
    expect(existsSync(data)).toBe(false);
    // Once a host has opened the profile (as install does), list reads it.
    const opened = (await PluginHost.open({ profile: 'scratch', env, sandbox: { proveAt: 'first_spawn' } }))._unsafeUnwrap();
    await opened.close();
    expect(await readdir(join(data, 'mcp-plugin-host'))).toEqual(['scratch']);
    const again = await cli(['list', '--profile', 'scratch', '--json'], { env });
    expect(json(again)).toEqual({ ok: true, profile: 'scratch', profile_dir: join(data, 'mcp-plugin-host', 'scratch'), plugins: [] });
  });

  it('PluginHost.profileDirFor names the directory open would use, checks the options as open does, and makes nothing', () => {
    const dir = join(work.path, 'for', 'profile');
    expect(PluginHost.profileDirFor({ profileDir: dir })._unsafeUnwrap()).toBe(dir);
    expect(PluginHost.profileDirFor({ profile: 'p', env: { XDG_DATA_HOME: '/data' } })._unsafeUnwrap()).toBe('/data/mcp-plugin-host/p');
    expect(PluginHost.profileDirFor({ profile: 'work/old' })._unsafeUnwrapErr()).toMatchObject({ code: 'HOST_INVALID_OPTIONS' });
    expect(existsSync(join(work.path, 'for'))).toBe(false);
  });
});
