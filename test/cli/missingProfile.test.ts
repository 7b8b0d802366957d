/**
 * Commands that change what is installed, and serve, on a profile whose
 * directory does not exist create nothing (a mistyped --profile used to leave
 * a whole profile layout behind): remove, quarantine, unquarantine, reload,
 * canary and setup answer PLUGIN_NOT_FOUND naming the directory; remove
 * --forget-secrets deletes what a store could still hold without making the
 * directory; serve refuses with HOST_INVALID_OPTIONS (exit 2), and finds its
 * profile through GUM_PROFILE as the other commands do. Real CLI
 * processes, for --profile-dir, the XDG default and a serve configuration file.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, GREETER_ENV, json, tempDir } from './cliHarness.js';

const SLOW = { timeout: 180_000 };
let work: { readonly path: string; dispose(): Promise<void> };
beforeAll(async () => {
  work = await tempDir('cli-missing-profile-');
});
afterAll(() => work.dispose());

const notFoundIn = (dir: string, pluginId: string): Record<string, unknown> => ({
  ok: false,
  error: { code: 'PLUGIN_NOT_FOUND', details: { plugin_id: pluginId, profile_dir: dir, profile_exists: false } },
});

describe('commands about an installed plugin on a profile that does not exist', () => {
  it('remove, quarantine, unquarantine, reload, canary and setup fail with PLUGIN_NOT_FOUND naming the directory, and make none', SLOW, async () => {
    const dir = join(work.path, 'typo', 'profile');
    const commands = [['remove', 'greeter'], ['quarantine', 'greeter'], ['unquarantine', 'greeter'], ['reload', 'greeter'], ['canary', 'greeter'], ['canary', 'greeter', '--live']];
    for (const args of commands) {
      const run = await cli([...args, '--profile-dir', dir, '--json']);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
      expect(json(run), args.join(' ')).toMatchObject(notFoundIn(dir, 'greeter'));
      expect(JSON.stringify(json(run))).toContain('only install does');
    }
    const setup = await cli(['setup', 'greeter', '--set', `${GREETER_ENV}=-`, '--profile-dir', dir, '--json'], { input: 'not-stored' });
    expect(setup.code, setup.stderr).toBe(1);
    expect(json(setup)).toMatchObject(notFoundIn(dir, 'greeter'));
    expect(existsSync(join(work.path, 'typo'))).toBe(false);
  });

  it('the text output names the profile and where the CLI looked', SLOW, async () => {
    const dir = join(work.path, 'text', 'profile');
    const run = await cli(['quarantine', 'greeter', '--profile-dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`plugin 'greeter' is not installed: profile default has no directory (${dir})`);
    expect(run.stderr).toMatch(/hint: .*Check --profile, --profile-dir and GUM_PROFILE/);
    expect(existsSync(join(work.path, 'text'))).toBe(false);
  });

  it('the default location (XDG_DATA_HOME/<app>/<profile>) is not made for a mistyped --profile or GUM_PROFILE', SLOW, async () => {
    const data = join(work.path, 'xdg');
    const env = { XDG_DATA_HOME: data };
    const flagged = await cli(['unquarantine', 'greeter', '--profile', 'wrok', '--json'], { env });
    expect(json(flagged)).toMatchObject(notFoundIn(join(data, 'mcp-plugin-host', 'wrok'), 'greeter'));
    const fromEnv = await cli(['reload', 'greeter', '--json'], { env: { ...env, GUM_PROFILE: 'wrok' } });
    expect(json(fromEnv)).toMatchObject(notFoundIn(join(data, 'mcp-plugin-host', 'wrok'), 'greeter'));
    const app = await cli(['remove', 'greeter', '--app-name', 'other-app', '--json'], { env });
    expect(json(app)).toMatchObject(notFoundIn(join(data, 'other-app', 'default'), 'greeter'));
    expect(existsSync(data)).toBe(false);
  });

  it('remove --forget-secrets deletes what is stored for the id without making the directory', SLOW, async () => {
    const dir = join(work.path, 'forget', 'profile');
    const run = await cli(['remove', 'greeter', '--forget-secrets', '--profile-dir', dir, '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toEqual({ ok: true, plugin_id: 'greeter', removed: false, credentials_deleted: true, profile_dir: dir, profile_exists: false });
    const text = await cli(['remove', 'greeter', '--forget-secrets', '--profile-dir', dir]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`greeter is not installed; deleted the credentials stored for it (${dir} does not exist)`);
    expect(existsSync(join(work.path, 'forget'))).toBe(false);
  });
});

describe('serve on a profile that does not exist', () => {
  it('refuses with HOST_INVALID_OPTIONS (exit 2) naming the directory, and makes none', SLOW, async () => {
    const dir = join(work.path, 'serve', 'profile');
    const run = await cli(['serve', '--profile-dir', dir, '--dev', '--json']);
    expect(run.code, run.stderr).toBe(2);
    expect(json(run)).toMatchObject({ ok: false, error: { code: 'HOST_INVALID_OPTIONS', details: { option: 'profileDir', profile_dir: dir, profile_exists: false } } });
    expect(JSON.stringify(json(run))).toContain('serve does not create a profile');
    const text = await cli(['serve', '--profile-dir', dir, '--dev', '--http', '--port', '0']);
    expect(text.code).toBe(2);
    expect(text.stderr).toContain(`the profile to serve has no directory (${dir})`);
    expect(text.stderr).not.toContain('listening on');
    expect(existsSync(join(work.path, 'serve'))).toBe(false);
  });

  it('picks the profile as every other command does: GUM_PROFILE below --profile and the file, its directory or none', SLOW, async () => {
    const data = join(work.path, 'serve-xdg');
    const env = { XDG_DATA_HOME: data, GUM_PROFILE: 'wrok' };
    const typo = await cli(['serve', '--json'], { env });
    expect(typo.code, typo.stderr).toBe(2);
    expect(json(typo)).toMatchObject({ ok: false, error: { code: 'HOST_INVALID_OPTIONS', details: { profile_dir: join(data, 'mcp-plugin-host', 'wrok'), profile_exists: false } } });
    expect(existsSync(data)).toBe(false);
    // An existing (empty) profile named by GUM_PROFILE is served, here until the client closes stdin, and no other is made.
    await mkdir(join(data, 'mcp-plugin-host', 'work'), { recursive: true });
    const served = await cli(['serve'], { env: { ...env, GUM_PROFILE: 'work' } });
    expect(served.code, served.stderr).toBe(0);
    expect(await readdir(join(data, 'mcp-plugin-host'))).toEqual(['work']);
    // --profile wins over GUM_PROFILE.
    const flagged = await cli(['serve', '--profile', 'other', '--json'], { env: { ...env, GUM_PROFILE: 'work' } });
    expect(json(flagged)).toMatchObject({ ok: false, error: { details: { profile_dir: join(data, 'mcp-plugin-host', 'other') } } });
  });

  it('a configuration file naming a missing profile directory (relative to the file) is refused the same way', SLOW, async () => {
    const config = join(work.path, 'gateway.json');
    await writeFile(config, JSON.stringify({ profileDir: 'configured/profile', dev: true }));
    const run = await cli(['serve', '--config', config, '--json']);
    expect(run.code, run.stderr).toBe(2);
    expect(json(run)).toMatchObject({ ok: false, error: { code: 'HOST_INVALID_OPTIONS', details: { profile_dir: join(work.path, 'configured', 'profile'), profile_exists: false } } });
    expect(existsSync(join(work.path, 'configured'))).toBe(false);
  });
});
