/**
 * The host's options are checked once, in full, before anything is opened:
 * unknown keys at any level are refused with the closest valid name, every
 * kind of number has one rule, enumerations and path segments are checked,
 * and no public method throws on an argument of the wrong type.
 */
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostError } from '../../src/errors/HostError.js';
import { PluginHost, type PluginHostOptions } from '../../src/host/PluginHost.js';
import { HostPool, packaged, removePackages } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

/** Opens a host with options a caller typed wrongly (what JavaScript callers and JSON configs can pass). */
async function openError(options: unknown): Promise<HostError> {
  return (await PluginHost.open(options as PluginHostOptions))._unsafeUnwrapErr();
}

describe('PluginHost.open options', () => {
  it('refuses an options value that is not an object instead of throwing', async () => {
    for (const options of [null, 42, 'dev', [{ profileKind: 'dev' }]]) {
      expect((await openError(options)).code, JSON.stringify(options)).toBe('HOST_INVALID_OPTIONS');
    }
  });

  it('refuses an unknown key, at the top level or inside a nested object, naming the closest valid one', async () => {
    const dir = await pool.profile();
    const base = { profileDir: join(dir, 'never'), profileKind: 'dev' };
    expect(await openError({ ...base, callTimoutMs: 5_000 })).toMatchObject({
      code: 'HOST_INVALID_OPTIONS',
      details: { option: 'callTimoutMs', closest: 'callTimeoutMs' },
    });
    expect((await openError({ ...base, callTimoutMs: 5_000 })).message).toContain('did you mean callTimeoutMs?');
    expect(await openError({ ...base, sandbox: { memoryLimitByte: 1 << 30 } })).toMatchObject({
      details: { option: 'sandbox.memoryLimitByte', closest: 'sandbox.memoryLimitBytes' },
    });
    expect(await openError({ ...base, sandbox: { pluginLimits: { p: { maxProcess: 4 } } } })).toMatchObject({
      details: { option: 'sandbox.pluginLimits.p.maxProcess', closest: 'sandbox.pluginLimits.p.maxProcesses' },
    });
    expect(await openError({ ...base, packageLimits: { maxEntry: 5 } })).toMatchObject({ details: { option: 'packageLimits.maxEntry', closest: 'packageLimits.maxEntries' } });
    const far = await openError({ ...base, somethingElseEntirely: true });
    expect(far.details).toEqual({ option: 'somethingElseEntirely' });
    await expect(access(join(dir, 'never'))).rejects.toThrow();
  });

  it('refuses profileKind "devel" rather than running a standard profile', async () => {
    expect(await openError({ profileDir: join(await pool.profile(), 'never'), profileKind: 'devel' })).toMatchObject({
      code: 'HOST_INVALID_OPTIONS',
      details: { option: 'profileKind' },
      message: expect.stringContaining('did you mean "dev"?'),
    });
    expect(await openError({ profileDir: join(await pool.profile(), 'never'), preset: 'google' })).toMatchObject({ details: { option: 'preset' } });
  });

  it('refuses an appName or profile that would leave the data home', async () => {
    const dataHome = await mkdtemp(join(tmpdir(), 'options-data-home-'));
    try {
      const env = { XDG_DATA_HOME: join(dataHome, 'share') };
      for (const named of [{ appName: '../../x' }, { appName: '..' }, { appName: 'a/b' }, { appName: '' }, { profile: '../escape' }]) {
        expect(await openError({ ...named, env, sandbox: { dangerouslyRunUnsandboxed: true }, profileKind: 'dev' }), JSON.stringify(named)).toMatchObject({
          code: 'HOST_INVALID_OPTIONS',
          details: { option: Object.keys(named)[0] },
        });
      }
      await expect(access(join(dataHome, 'x'))).rejects.toThrow();
      await expect(access(join(dataHome, 'share'))).rejects.toThrow();
    } finally {
      await rm(dataHome, { recursive: true, force: true });
    }
  });

  it('holds every kind of number to one rule: whole milliseconds no longer than a timer can wait, whole counts and bytes', async () => {
    const dir = join(await pool.profile(), 'never');
    for (const [option, value] of [
      ['callTimeoutMs', 1.5],
      ['maxTotalTimeoutMs', 2 ** 31],
      ['idleTimeoutMs', 0.5],
      ['backoffScheduleMs', [30_000, 2.5]],
      ['maxInFlight', '4'],
    ] as const) {
      expect(await openError({ profileDir: dir, profileKind: 'dev', [option]: value }), option).toMatchObject({ code: 'HOST_INVALID_OPTIONS', details: { option } });
    }
    expect(await openError({ profileDir: dir, profileKind: 'dev', sandbox: { memoryLimitBytes: 1.5 } })).toMatchObject({ details: { option: 'sandbox.memoryLimitBytes' } });
  });

  it('refuses a value of the wrong type for an option no type checker saw', async () => {
    const dir = join(await pool.profile(), 'never');
    for (const [option, value] of [
      ['requireSignatures', 'yes'],
      ['trustedKeys', 'key'],
      ['confirm', true],
      ['env', { PATH: 1 }],
      ['handshakeCapabilities', { p: 'net' }],
    ] as const) {
      const refused = await openError({ profileDir: dir, profileKind: 'dev', [option]: value });
      expect(refused.code, option).toBe('HOST_INVALID_OPTIONS');
      expect(String(refused.details.option), option).toContain(option);
    }
  });
});

describe('public methods given arguments of the wrong type', () => {
  it('return HOST_INVALID_OPTIONS instead of throwing', async () => {
    const host = await pool.open(await pool.profile());
    const wrong = host as unknown as Record<string, (...args: unknown[]) => PromiseLike<{ _unsafeUnwrapErr(): HostError }>>;
    const calls: readonly [string, readonly unknown[], string][] = [
      ['install', [123], 'source'],
      ['install', [undefined], 'source'],
      ['install', ['/nowhere', null], 'PluginHost.install'],
      ['install', ['/nowhere', { canery: false }], 'canery'],
      ['inspect', [{}], 'source'],
      ['call', [42, {}], 'opId'],
      ['call', ['plug.a.b', {}, { timeoutMS: 5 }], 'timeoutMS'],
      ['call', ['plug.a.b', {}, { signal: 'stop' }], 'signal'],
      ['call', ['plug.a.b', {}, { timeoutMs: -1 }], 'timeoutMs'],
      ['info', [null], 'pluginId'],
      ['remove', [7], 'pluginId'],
      ['remove', ['p', { drainTimeout: 5 }], 'drainTimeout'],
      ['canary', ['p', { live: 'yes' }], 'live'],
      ['setup', ['p', null], 'values'],
      ['setup', ['p', { TOKEN: 5 }], 'values.TOKEN'],
      ['tools', [Symbol('p')], 'pluginId'],
      ['unquarantine', [undefined], 'pluginId'],
      ['reload', [3], 'pluginId'],
      ['resource', [undefined], 'uri'],
    ];
    for (const [method, args, option] of calls) {
      const label = `${method}(${args.map((a) => (typeof a === 'symbol' ? 'symbol' : JSON.stringify(a))).join(', ')})`;
      let error: HostError | undefined;
      expect(() => {
        void wrong[method]!.apply(host, [...args]).then((result) => (error = result._unsafeUnwrapErr()));
      }, label).not.toThrow();
      await new Promise((resolve) => setImmediate(resolve));
      await expect.poll(() => error, { timeout: 5_000 }).toBeDefined();
      expect(error, label).toMatchObject({ code: 'HOST_INVALID_OPTIONS' });
      expect(String(error!.details.option), label).toBe(option);
    }
    expect((await host.install(await packaged('probe'), { canary: false })).isOk()).toBe(true);
  });

  it('answer a malformed inventory URI with VARIANT_NOT_FOUND instead of throwing', async () => {
    const host = await pool.open(await pool.profile());
    let answered: ReturnType<PluginHost['resource']> | undefined;
    expect(() => (answered = host.resource('mcp-plugin-host://plugin/%E0%A4%A'))).not.toThrow();
    expect((await answered!)._unsafeUnwrapErr()).toMatchObject({ code: 'VARIANT_NOT_FOUND', details: { uri: 'mcp-plugin-host://plugin/%E0%A4%A' } });
  });
});
