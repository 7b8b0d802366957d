/**
 * The install's trust gate judged against what the install replaces when it
 * commits: two Installers, each with its own CatalogStore, on one profile
 * (as a second CLI or host would be). Installer A is paused after its trust
 * gate (in its `accept` callback, or in `initialStatus`, which runs just
 * before its catalog transaction) while B installs or removes the same
 * plugin id; A then commits, or is refused, against what B left installed.
 * Last, a PluginHost asking while the CLI, in another process, installs.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Installer } from '../../src/installer/Installer.js';
import type { TrustRequest } from '../../src/installer/trust.js';
import { cli } from '../cli/cliHarness.js';
import { answered, HostPool, packagedVersion, removePackages } from '../support/hostHarness.js';
import { editManifest, installed, refusedWith, testProfile, unwrap, type TestProfile } from './InstallerHarness.js';

let p: TestProfile | undefined;
afterEach(async () => {
  await p?.dispose();
  p = undefined;
});

/** The greeter fixture (owner io.example.greeter, read tools greet and shout, env GREETER_LOCALE) at `version`, its manifest edited by `edit`. */
async function greeter(version: string, edit: (m: Record<string, unknown>) => void = () => undefined): Promise<string> {
  const pkg = await profile().copyFixture('install-node', `greeter-${version}-${Math.random().toString(36).slice(2)}`);
  await editManifest(pkg, (m) => {
    m.version = version;
    edit(m);
  });
  return pkg;
}

const capabilities = (m: Record<string, unknown>): Record<string, unknown> => m.declared_capabilities as Record<string, unknown>;
const withNetwork = (m: Record<string, unknown>): void => void (capabilities(m).network = true);
const tools = (m: Record<string, unknown>): Record<string, unknown>[] => m.advertised_tools as Record<string, unknown>[];

/** An `initialStatus` callback (run after the trust gate, before the catalog transaction) that does `action` first. */
const meanwhile =
  (action: () => Promise<unknown>) =>
  async (): Promise<'installed_pending_restart'> => {
    await action();
    return 'installed_pending_restart';
  };

/** The test's profile, once made. */
function profile(): TestProfile {
  if (p === undefined) throw new Error('no test profile');
  return p;
}

/** A second Installer on the same profile, over its own CatalogStore. */
async function rival(): Promise<Installer> {
  return profile().installerWith({}, await profile().openStore());
}

describe('trust judged again under the profile lock', () => {
  it('without accept: refuses an upgrade whose powers were not widened against the version judged, but are against the one another installer put in meanwhile', async () => {
    p = await testProfile('dev');
    const { installer } = p;
    unwrap(await installer.install(await greeter('1.0.0', withNetwork)));
    const b = await rival();
    // B's 1.5.0 drops the network (fewer powers: installed unasked), after A judged 2.0.0, which keeps it, against 1.0.0.
    const fewer = await greeter('1.5.0');
    const upgrade = await greeter('2.0.0', withNetwork);
    const refused = refusedWith(
      await installer.install(upgrade, {
        initialStatus: meanwhile(async () => unwrap(await b.install(fewer))),
      }),
      'PLUGIN_TRUST_DECLINED',
    );
    expect(refused.details).toEqual({ plugin_id: 'greeter', namespace_owner: 'io.example.greeter', reason: 'capabilities_widened', added_capabilities: [{ field: 'network', value: true }] });
    expect((await installed(profile(), 'greeter'))?.lock.version).toBe('1.5.0');
    // Nothing of A's attempt is left: B's install root is the only one.
    expect((await profile().census()).installRoots).toHaveLength(1);
  });

  it('without accept: refuses an upgrade that makes a tool easier to call than the version another installer put in meanwhile', async () => {
    p = await testProfile('dev');
    const { installer } = p;
    unwrap(await installer.install(await greeter('1.0.0')));
    const b = await rival();
    const stricter = await greeter('1.5.0', (m) => void (tools(m)[1]!.risk_class = 'destructive'));
    const refused = refusedWith(
      await installer.install(await greeter('2.0.0'), {
        initialStatus: meanwhile(async () => unwrap(await b.install(stricter))),
      }),
      'PLUGIN_TRUST_DECLINED',
    );
    expect(refused.details).toMatchObject({ reason: 'risk_lowered', risk_changes: [{ name: 'shout', from: { risk_class: 'destructive' }, to: { risk_class: 'read' } }] });
    expect((await installed(profile(), 'greeter'))?.lock.version).toBe('1.5.0');
  });

  it('with accept: refuses, retryable, an upgrade accepted against a version another installer replaced while the callback was asking; asked again, it installs', async () => {
    p = await testProfile('dev');
    const { installer } = p;
    unwrap(await installer.install(await greeter('1.0.0', withNetwork)));
    const b = await rival();
    const fewer = await greeter('1.5.0');
    // 2.0.0 adds an env name to 1.0.0's powers: that is what A's callback is asked about, not the network.
    const upgrade = await greeter('2.0.0', (m) => {
      withNetwork(m);
      capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN'];
    });
    const asked: TrustRequest[] = [];
    const refused = refusedWith(
      await installer.install(upgrade, {
        accept: async (request) => {
          asked.push(request);
          unwrap(await b.install(fewer));
          return true;
        },
      }),
      'PLUGIN_TRUST_DECLINED',
    );
    expect(asked.map((r) => r.added_capabilities)).toEqual([[{ field: 'env_allow', value: 'GREETER_TOKEN' }]]);
    expect(refused.retryable).toBe(true);
    expect(refused.details).toMatchObject({
      plugin_id: 'greeter',
      reason: 'baseline_changed',
      added_capabilities: [
        { field: 'network', value: true },
        { field: 'env_allow', value: 'GREETER_TOKEN' },
      ],
    });
    expect(refused.hint).toContain('Install again');
    expect((await installed(profile(), 'greeter'))?.lock.version).toBe('1.5.0');
    // Retried, it is asked against 1.5.0, with both powers, and installs.
    const again: TrustRequest[] = [];
    unwrap(await installer.install(upgrade, { accept: (request) => (again.push(request), true) }));
    expect(again.map((r) => r.added_capabilities)).toEqual([[{ field: 'network', value: true }, { field: 'env_allow', value: 'GREETER_TOKEN' }]]);
    expect((await installed(profile(), 'greeter'))?.lock.version).toBe('2.0.0');
  });

  it('commits when what another installer changed meanwhile needs no question either: a remove (its owner record keeps the powers), or a version with the same powers', async () => {
    p = await testProfile('dev');
    const { installer } = p;
    unwrap(await installer.install(await greeter('1.0.0', withNetwork)));
    const b = await rival();
    unwrap(
      await installer.install(await greeter('2.0.0', withNetwork), {
        initialStatus: meanwhile(async () => unwrap(await b.remove('greeter'))),
      }),
    );
    expect((await installed(profile(), 'greeter'))?.lock.version).toBe('2.0.0');
    // Asked about the env name against 2.0.0; B meanwhile installs (accepted) 2.5.0 with that name already: nothing is new against it.
    const same = await greeter('2.5.0', (m) => {
      withNetwork(m);
      capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN'];
    });
    const asked: unknown[] = [];
    const upgraded = unwrap(
      await installer.install(
        await greeter('3.0.0', (m) => {
          withNetwork(m);
          capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN'];
        }),
        {
          accept: async (request) => {
            asked.push(request.added_capabilities);
            unwrap(await b.install(same, { accept: () => true }));
            return true;
          },
        },
      ),
    );
    expect(asked).toEqual([[{ field: 'env_allow', value: 'GREETER_TOKEN' }]]);
    expect(upgraded.lock.version).toBe('3.0.0');
  });

  it('with accept: commits when the version another installer put in meanwhile asks the very question the callback accepted', async () => {
    p = await testProfile('dev');
    const { installer } = p;
    unwrap(await installer.install(await greeter('1.0.0', withNetwork)));
    const b = await rival();
    // B's 1.5.0 adds a read tool: another baseline, but against it 2.0.0 (which drops that tool) changes what it changed against 1.0.0, no more.
    const peek = await greeter('1.5.0', (m) => {
      withNetwork(m);
      tools(m).push({ name: 'peek', description: 'Peeks', risk_class: 'read' });
    });
    const upgrade = await greeter('2.0.0', (m) => {
      withNetwork(m);
      capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN'];
    });
    const asked: TrustRequest[] = [];
    const upgraded = unwrap(
      await installer.install(upgrade, {
        accept: async (request) => {
          asked.push(request);
          unwrap(await b.install(peek));
          return true;
        },
      }),
    );
    expect(asked.map((r) => r.added_capabilities)).toEqual([[{ field: 'env_allow', value: 'GREETER_TOKEN' }]]);
    expect(upgraded.lock.version).toBe('2.0.0');
    // A question that differs against what is installed now is still refused: B's 2.5.0 drops the network 3.0.0 keeps.
    const fewer = await greeter('2.5.0', (m) => void (capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN']));
    const refused = refusedWith(
      await installer.install(
        await greeter('3.0.0', (m) => {
          withNetwork(m);
          capabilities(m).env_allow = ['GREETER_LOCALE', 'GREETER_TOKEN', 'GREETER_SECRET'];
        }),
        {
          accept: async () => {
            unwrap(await b.install(fewer, { accept: () => true }));
            return true;
          },
        },
      ),
      'PLUGIN_TRUST_DECLINED',
    );
    expect(refused.details).toMatchObject({ reason: 'baseline_changed' });
    expect((await installed(profile(), 'greeter'))?.lock.version).toBe('2.5.0');
  });
});

const pool = new HostPool();
afterAll(async () => {
  await pool.cleanup();
  await removePackages();
});

describe('a host asking while the CLI installs the same plugin in another process', () => {
  it('refuses, retryable, the upgrade its accept callback accepted against the version the CLI replaced meanwhile', { timeout: 120_000 }, async () => {
    const dir = await pool.profile();
    const host = await pool.open(dir);
    const probe = async (version: string, network: boolean, env: string[]): Promise<string> => {
      const pkg = await packagedVersion('probe', version);
      await editManifest(pkg, (m) => {
        capabilities(m).network = network;
        capabilities(m).env_allow = env;
      });
      return pkg;
    };
    answered(await host.install(await probe('1.0.0', true, ['PROBE_GREETING']), { canary: false, accept: () => true }));
    const fewer = await probe('1.5.0', false, ['PROBE_GREETING']);
    const asked: TrustRequest[] = [];
    const result = await host.install(await probe('2.0.0', true, ['PROBE_GREETING', 'PROBE_TOKEN']), {
      canary: false,
      accept: async (request) => {
        asked.push(request);
        // While the person is being asked, the CLI (another process) installs 1.5.0 without the network.
        const run = await cli(['install', fewer, '--dev', '--yes', '--skip-canary', '--profile-dir', dir, '--json']);
        expect(run.code, run.stderr).toBe(0);
        return true;
      },
    });
    expect(asked.map((r) => r.added_capabilities)).toEqual([[{ field: 'env_allow', value: 'PROBE_TOKEN' }]]);
    expect(result.isErr() && [result.error.code, result.error.retryable, result.error.details?.reason]).toEqual(['PLUGIN_TRUST_DECLINED', true, 'baseline_changed']);
    expect(answered(await host.info('host-probe')).version).toBe('1.5.0');
  });
});
