/**
 * Installable packages of the fault-injection plugins (fixtures/plugins/fault):
 * each protocol's entry bundled once (esbuild, as an author ships it), then
 * copied per plugin id with its manifest rewritten, so one run can install
 * many plugins of the same code under different ids.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';

/** The stdio protocols the fault plugins speak. */
export type FaultProtocol = 'mcp-plugin' | 'ndjson-rpc' | 'handshake';

/** Every fault protocol, in report order. */
export const FAULT_PROTOCOLS: readonly FaultProtocol[] = ['mcp-plugin', 'ndjson-rpc', 'handshake'];

const FAULT_ROOT = fileURLToPath(new URL('../../fixtures/plugins/fault/', import.meta.url));

const SOURCES: Readonly<Record<FaultProtocol, { readonly dir: string; readonly entry: string }>> = {
  'mcp-plugin': { dir: 'mcp', entry: 'bin/fault-mcp.mjs' },
  'ndjson-rpc': { dir: 'ndjson', entry: 'bin/fault-ndjson.mjs' },
  handshake: { dir: 'handshake', entry: 'bin/fault-handshake.mjs' },
};

/** How one copy differs from the bundled fixture. */
export interface PackageVariant {
  /** The plugin id to install under. */
  readonly pluginId: string;
  /** Whether it may read FAULT_MODE and the fault knobs; a healthy copy reads only FAULT_MARKER. */
  readonly faulty: boolean;
}

/** Bundled fault packages under one temp directory; `dispose` removes it. */
export class FaultPackages {
  private copies = 0;

  private constructor(private readonly root: string) {}

  /** Bundles the protocols' entries (a few hundred ms each). */
  static async build(protocols: readonly FaultProtocol[] = FAULT_PROTOCOLS): Promise<FaultPackages> {
    const root = await mkdtemp(join(tmpdir(), 'fault-packages-'));
    for (const protocol of protocols) {
      const { dir, entry } = SOURCES[protocol];
      await packageFixturePlugin(join(FAULT_ROOT, dir), { bundle: [entry], into: join(root, 'bundled', protocol) });
    }
    return new FaultPackages(root);
  }

  /** A package directory for `variant`, ready to install. */
  async package(protocol: FaultProtocol, variant: PackageVariant): Promise<string> {
    const out = join(this.root, `copy-${++this.copies}-${variant.pluginId}`);
    await cp(join(this.root, 'bundled', protocol), out, { recursive: true });
    const manifestPath = join(out, 'manifest.json');
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown> & {
      declared_capabilities: { env_allow: string[] };
    };
    manifest.plugin_id = variant.pluginId;
    if (!variant.faulty) manifest.declared_capabilities.env_allow = ['FAULT_MARKER'];
    await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    return out;
  }

  /** Removes every bundle and copy. */
  async dispose(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}
