/** A scratch dev profile with the bundled hello fixture installed, for the benchmarks that call it through a host. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';
import { PluginHost } from '../../src/index.js';

/** Another fixture plugin to install beside hello: its directory under fixtures/plugins and the Node entries to bundle. */
export interface BesideHello {
  readonly fixture: string;
  readonly bundle: readonly string[];
}

const fixtureDir = (name: string): string => fileURLToPath(new URL(`../../fixtures/plugins/${name}`, import.meta.url));

/**
 * Runs `measure` on a new profile (under the temp dir, named from `prefix`)
 * where the hello fixture (and the fixtures `beside` names) are installed by
 * a host closed beforehand, with the path of hello's bundled entry (to run
 * the same plugin directly) and of its package (to install copies of it);
 * the profile and the packages are removed afterwards.
 */
export async function withHelloProfile<T>(
  prefix: string,
  measure: (profileDir: string, helloEntry: string, helloPkg: string) => Promise<T>,
  beside: readonly BesideHello[] = [],
): Promise<T> {
  const profileDir = await mkdtemp(join(tmpdir(), prefix));
  const packages: string[] = [];
  try {
    for (const { fixture, bundle } of [{ fixture: 'hello', bundle: ['bin/hello-mcp.mjs'] }, ...beside]) packages.push(await packageFixturePlugin(fixtureDir(fixture), { bundle: [...bundle] }));
    const installer = await PluginHost.open({ profileDir, profileKind: 'dev' });
    if (installer.isErr()) throw installer.error;
    for (const pkg of packages) (await installer.value.install(pkg))._unsafeUnwrap();
    await installer.value.close();
    const helloPkg = packages[0]!;
    return await measure(profileDir, join(helloPkg, 'bin/hello-mcp.mjs'), helloPkg);
  } finally {
    await rm(profileDir, { recursive: true, force: true });
    await Promise.all(packages.map((pkg) => rm(pkg, { recursive: true, force: true })));
  }
}
