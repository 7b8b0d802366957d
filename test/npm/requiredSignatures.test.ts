/**
 * A host that requires signatures installs only packages a trusted key
 * signed. An `npm:` source has nothing to sign (npm checks a registry's
 * integrity, and a local tarball's only against itself; the `signature`
 * option is refused for it), so under `requireSignatures` it is refused
 * before npm runs, as an archive without a signature is: a local
 * `npm:<path>.tgz` was otherwise an unsigned archive the policy never saw.
 */
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { ed25519Keys } from '../installer/craftArchives.js';
import { packServer, GREETER_SERVER } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

describe('npm: sources on a host that requires signatures', { timeout: 120_000 }, () => {
  it('are refused as unsigned (PLUGIN_SIGNATURE_INVALID, reason missing) before npm runs, and install without the requirement', async () => {
    const tarball = await packServer(await pool.profile(), { name: 'unsigned-greeter', source: GREETER_SERVER });
    const dir = await pool.profile();
    // A registry nothing listens on: the refusal comes before npm would ask it.
    const strict = await pool.open(dir, { profileKind: 'standard', trustedKeys: [ed25519Keys().pem], requireSignatures: true, npm: { registry: 'http://127.0.0.1:9/' } });
    for (const source of [`npm:${tarball}`, 'npm:unsigned-greeter@1.0.0']) {
      const refused = (await strict.install(source, { canary: false }))._unsafeUnwrapErr();
      expect(refused.code, refused.message).toBe('PLUGIN_SIGNATURE_INVALID');
      expect(refused.details).toMatchObject({ reason: 'missing', source: 'npm' });
      expect(refused.hint).toContain('requireSignatures');
    }
    // wrap runs the server of what it fetches: refused the same way, before npm runs.
    const wrapRefused = (await strict.wrap(`npm:${tarball}`))._unsafeUnwrapErr();
    expect(wrapRefused).toMatchObject({ code: 'PLUGIN_SIGNATURE_INVALID', details: { reason: 'missing', source: 'npm' } });
    // Refused before anything was fetched or staged: no npm project, no install root.
    expect((await strict.list())._unsafeUnwrap()).toEqual([]);
    expect(await readdir(join(dir, 'staging')).catch(() => [])).toEqual([]);
    await expect(access(join(dir, 'plugins', 'unsigned-greeter'))).rejects.toThrow();
    await strict.close();

    const open = await pool.open(await pool.profile(), { profileKind: 'standard', trustedKeys: [ed25519Keys().pem] });
    expect((await open.install(`npm:${tarball}`, { canary: false })).isOk()).toBe(true);
  });
});
