/**
 * The directories the host creates and binds for a plugin are resolved
 * without following links the plugin planted, and (on a root host) every
 * plugin runs as a user of its own. Real hosts, real bubblewrap, a real
 * ndjson-rpc plugin whose `act` tool does one file operation per call.
 */
import { chmod, link, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { pluginSearchPath } from '../../src/env/pluginPath.js';
import { DEFAULT_PLUGIN_UID_RANGE } from '../../src/sandbox/pluginIdentity.js';
import { HostPool } from '../support/hostHarness.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

const ACTOR = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
import * as fs from 'node:fs';
import { isAbsolute, join } from 'node:path';
const at = (p) => (isAbsolute(p) ? p : join(process.env.HOME, p));
const act = (p) => {
  try {
    switch (p.op) {
      case 'symlink': fs.symlinkSync(p.target, at(p.path)); return { ok: true };
      case 'write': fs.writeFileSync(join(process.env.TMPDIR, p.name), 'written by the plugin'); return { ok: true };
      case 'read': return { ok: true, content: fs.readFileSync(at(p.path), 'utf8') };
      case 'self': return { ok: true, status: fs.readFileSync('/proc/self/status', 'utf8'), env: process.env };
      default: return { ok: false, code: 'unknown op' };
    }
  } catch (e) {
    return { ok: false, code: e.code ?? String(e) };
  }
};
createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id: request.id, result: act(request.params ?? {}) }) + '\\n');
});
`;

const scratch: string[] = [];
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true }))));

async function tempDir(base: string, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(base, prefix));
  scratch.push(dir);
  return dir;
}

/** A package of the actor plugin with the given id, version and fs_write_dir. */
async function actorPackage(pluginId: string, version: string, fsWriteDir: string): Promise<string> {
  const dir = await tempDir(tmpdir(), 'actor-pkg-');
  await mkdir(join(dir, 'bin'));
  await writeFile(join(dir, 'bin', 'actor.mjs'), ACTOR, { mode: 0o755 });
  const manifest = {
    manifest_schema_version: 1,
    plugin_id: pluginId,
    name: 'Actor',
    version,
    description: 'Does one file operation per call',
    namespace_owner: `io.example.${pluginId}`,
    shape: 'ndjson-rpc',
    executable: 'bin/actor.mjs',
    advertised_tools: [{ name: 'act', description: 'One file operation', risk_class: 'read' }],
    declared_capabilities: { network: false, fs_write_dir: fsWriteDir, env_allow: [] },
  };
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

type ActResult = { ok: boolean; code?: string; content?: string; status?: string; env?: Record<string, string> };

async function act(host: Awaited<ReturnType<HostPool['open']>>, pluginId: string, params: Record<string, unknown>): Promise<ActResult> {
  const result = await host.call(`plug.${pluginId}.act`, params);
  if (result.isErr()) throw result.error;
  return result.value.value as ActResult;
}

/** Opens a host on a profile under one sandbox backend. */
type Opener = (profile: string, options?: Parameters<HostPool['open']>[1]) => ReturnType<HostPool['open']>;

/** Installs v1 (writes into its data directory), plants a link with it, then installs v2 with `fsWriteDir`. */
async function plantThenUpgrade(open: Opener, pluginId: string, linkName: string, target: string, fsWriteDir: string): Promise<{ profile: string }> {
  const profile = await pool.profile();
  const v1 = await open(profile);
  (await v1.install(await actorPackage(pluginId, '1.0.0', ''), { canary: false }))._unsafeUnwrap();
  const v1Host = await open(profile);
  expect(await act(v1Host, pluginId, { op: 'symlink', target, path: linkName })).toEqual({ ok: true });
  await v1Host.close();
  (await v1.install(await actorPackage(pluginId, '2.0.0', fsWriteDir), { canary: false }))._unsafeUnwrap();
  return { profile };
}

const field = (status: string, name: string): string[] => (new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '').trim().split(/\s+/);

describe.each(LINUX_BACKENDS)('under %s', (backend) => {
  const open: Opener = (profile, options = {}) => pool.open(profile, { ...options, sandbox: { ...options.sandbox, backend } });

  describe('writable directory behind a link the plugin planted', () => {
    it('refuses fs_write_dir "cache" when an earlier version made cache a link out of the data directory, and writes nothing there', async () => {
      const outside = await tempDir(tmpdir(), 'outside-');
      const { profile } = await plantThenUpgrade(open, 'actor-link', 'cache', outside, 'cache');
      const host = await open(profile);
      const call = await host.call('plug.actor-link.act', { op: 'write', name: 'pwned' });
      const error = call._unsafeUnwrapErr();
      expect(error.code).toBe('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX');
      expect(error.details).toMatchObject({ plugin_id: 'actor-link', fs_write_dir: 'cache', component: 'cache', found: 'symlink', link_target: outside });
      expect(await readdir(outside)).toEqual([]);
    });

    it('refuses a link in an intermediate component (fs_write_dir "a/b" with a -> elsewhere) and creates nothing elsewhere', async () => {
      const outside = await tempDir(tmpdir(), 'outside-');
      const { profile } = await plantThenUpgrade(open, 'actor-mid', 'a', outside, 'a/b');
      const host = await open(profile);
      const error = (await host.call('plug.actor-mid.act', { op: 'write', name: 'pwned' }))._unsafeUnwrapErr();
      expect(error.code).toBe('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX');
      expect(error.details).toMatchObject({ component: 'a', found: 'symlink' });
      expect(await readdir(outside)).toEqual([]);
    });

    it('names a file an earlier version left in the way, then binds the real subdirectory once it is gone', async () => {
      const profile = await pool.profile();
      const installer = await open(profile);
      (await installer.install(await actorPackage('actor-sub', '1.0.0', ''), { canary: false }))._unsafeUnwrap();
      const v1 = await open(profile);
      expect(await act(v1, 'actor-sub', { op: 'write', name: 'cache' })).toEqual({ ok: true });
      await v1.close();
      (await installer.install(await actorPackage('actor-sub', '2.0.0', 'cache/db'), { canary: false }))._unsafeUnwrap();
      const v2 = await open(profile);
      const refused = (await v2.call('plug.actor-sub.act', { op: 'write', name: 'note' }))._unsafeUnwrapErr();
      expect(refused.code).toBe('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX');
      expect(refused.details).toMatchObject({ component: 'cache', found: 'file' });
      await v2.close();

      await rm(join(profile, 'data', 'actor-sub', 'cache'));
      const fixed = await open(profile);
      expect(await act(fixed, 'actor-sub', { op: 'write', name: 'note' })).toEqual({ ok: true });
      expect(await readFile(join(profile, 'data', 'actor-sub', 'cache', 'db', 'note'), 'utf8')).toBe('written by the plugin');
      const info = (await fixed.info('actor-sub'))._unsafeUnwrap();
      expect(info.enforced_capabilities?.writablePaths).toEqual([join(profile, 'data', 'actor-sub', 'cache', 'db')]);
    });
  });

  describe('PATH', () => {
    it('gives plugins the interpreter directory and the system directories, never the host PATH', async () => {
      const profile = await pool.profile();
      const env = { ...process.env, PATH: '/opt/host-only/bin:/usr/bin:/bin' };
      const host = await open(profile, { env });
      (await host.install(await actorPackage('actor-path', '1.0.0', ''), { canary: false }))._unsafeUnwrap();
      const running = await open(profile, { env });
      const self = await act(running, 'actor-path', { op: 'self' });
      expect(self.env?.PATH).toBe(pluginSearchPath('/usr/bin/node'));
      expect(self.env?.PATH).not.toContain('/opt/host-only/bin');
    });
  });

  describe.runIf(process.getuid?.() === 0)('a root host', () => {
    it('runs each plugin as its own user: no capabilities, no root-only files, data directories 0700 and apart', async () => {
      // /etc is mounted in every sandbox and this file is not on the mask list: only its mode protects it.
      const secretDir = await tempDir('/etc', 'mcp-plugin-host-test-');
      await chmod(secretDir, 0o755);
      const secret = join(secretDir, 'wg0.conf');
      await writeFile(secret, 'PrivateKey = root-only', { mode: 0o600 });
      const profile = await pool.profile();
      const installer = await open(profile);
      for (const id of ['actor-one', 'actor-two']) (await installer.install(await actorPackage(id, '1.0.0', ''), { canary: false }))._unsafeUnwrap();
      const host = await open(profile);

      expect(await act(host, 'actor-one', { op: 'read', path: secret })).toEqual({ ok: false, code: 'EACCES' });
      const users: number[] = [];
      for (const id of ['actor-one', 'actor-two']) {
        const status = (await act(host, id, { op: 'self' })).status ?? '';
        const uids = field(status, 'Uid').map(Number);
        const gids = field(status, 'Gid').map(Number);
        // Real, effective, saved and file-system ids are all the plugin's.
        expect(new Set(uids).size).toBe(1);
        expect(new Set(gids)).toEqual(new Set([uids[0]]));
        expect(uids[0]).toBeGreaterThanOrEqual(DEFAULT_PLUGIN_UID_RANGE.first);
        expect(uids[0]).toBeLessThan(DEFAULT_PLUGIN_UID_RANGE.first + DEFAULT_PLUGIN_UID_RANGE.count);
        for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) expect(BigInt(`0x${field(status, set)[0]}`), set).toBe(0n);
        expect(field(status, 'NoNewPrivs')).toEqual(['1']);
        const data = await stat(join(profile, 'data', id));
        expect(data.uid).toBe(uids[0]);
        expect(data.mode & 0o777).toBe(0o700);
        expect((await host.info(id))._unsafeUnwrap().enforced_capabilities?.runsAs).toEqual({ uid: uids[0], gid: uids[0] });
        users.push(uids[0]!);
      }
      expect(users[0]).not.toBe(users[1]);
      // The second plugin's files are another user's 0700 directory away, even if it were mounted.
      expect(await act(host, 'actor-two', { op: 'write', name: 'mine' })).toEqual({ ok: true });
      expect((await stat(join(profile, 'data', 'actor-two', 'mine'))).uid).toBe(users[1]);
    });

    it('gives an existing root-owned data directory to the plugin without following its links or taking files with other names', async () => {
      const profile = await pool.profile();
      const outside = await tempDir('/srv', 'outside-');
      const target = join(outside, 'target');
      await writeFile(target, 'host file', { mode: 0o600 });
      const data = join(profile, 'data', 'actor-old');
      await mkdir(join(data, 'nested'), { recursive: true, mode: 0o755 });
      await writeFile(join(data, 'nested', 'state.json'), '{}');
      await symlink(target, join(data, 'link'));
      await link(target, join(data, 'hardlink'));
      const host = await open(profile);
      (await host.install(await actorPackage('actor-old', '1.0.0', ''), { canary: false }))._unsafeUnwrap();
      const running = await open(profile);
      expect(await act(running, 'actor-old', { op: 'read', path: 'nested/state.json' })).toEqual({ ok: true, content: '{}' });
      const owner = (await stat(data)).uid;
      expect(owner).toBeGreaterThanOrEqual(DEFAULT_PLUGIN_UID_RANGE.first);
      expect((await stat(data)).mode & 0o777).toBe(0o700);
      expect((await stat(join(data, 'nested', 'state.json'))).uid).toBe(owner);
      expect((await lstat(join(data, 'link'))).uid).toBe(owner);
      expect((await stat(target)).uid).toBe(0);
      expect((await stat(join(data, 'hardlink'))).uid).toBe(0);
    });
  });
});
