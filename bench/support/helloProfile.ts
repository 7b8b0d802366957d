/** A scratch dev profile with the bundled hello fixture installed, for the benchmarks that call it through a host. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { PluginHost } from '../../src/index.js';

/**
 * Runs `measure` on a new profile (under the temp dir, named from `prefix`)
 * where the hello fixture is installed by a host closed beforehand, with the
 * path of the package's bundled entry (to run the same plugin directly);
 * the profile and the package are removed afterwards.
 */
export async function withHelloProfile<T>(prefix: string, measure: (profileDir: string, helloEntry: string) => Promise<T>): Promise<T> {
  const profileDir = await mkdtemp(join(tmpdir(), prefix));
  const helloPkg = await packageFixturePlugin(fileURLToPath(new URL('../../fixtures/plugins/hello', import.meta.url)), { bundle: ['bin/hello-mcp.mjs'] });
  try {
    const installer = await PluginHost.open({ profileDir, profileKind: 'dev' });
    if (installer.isErr()) throw installer.error;
    (await installer.value.install(helloPkg))._unsafeUnwrap();
    await installer.value.close();
    return await measure(profileDir, join(helloPkg, 'bin/hello-mcp.mjs'));
  } finally {
    await rm(profileDir, { recursive: true, force: true });
    await rm(helloPkg, { recursive: true, force: true });
  }
}
