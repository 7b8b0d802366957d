import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isBundleDocument } from '../bundle/bundleManifest.js';
import { PACKAGE_MANIFEST_NAMES, type PackageManifestName } from '../manifest/ManifestValidator.js';
import { DEFAULT_PARSE_LIMITS, decodeManifestBytes, parseJsonText } from '../manifest/parse.js';
import { readAtMost } from '../manifest/readAtMost.js';
import { refuse } from './refusal.js';

/** Where the package root is inside an extracted tree. */
export interface PackageRoot {
  /** The directory holding the manifest. */
  readonly dir: string;
  /** The manifest found there. */
  readonly manifestFile: PackageManifestName;
  /** The single top-level directory that was stripped, if any. */
  readonly strippedTopDirectory?: string;
}

async function manifestIn(dir: string): Promise<{ manifest: PackageManifestName | undefined; names: string[]; onlyDirectory: string | undefined }> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
  const only = entries.length === 1 && entries[0]?.isDirectory() === true ? entries[0].name : undefined;
  const found = PACKAGE_MANIFEST_NAMES.filter((name) => files.has(name));
  if (found.length > 1) await refuseAmbiguous(dir, found);
  return { manifest: found[0], names: entries.map((e) => e.name).sort(), onlyDirectory: only };
}

/** Whether the `manifest.json` in `dir` is an MCP Bundle's (see isBundleDocument), read as the bundle reader reads it: no more than the manifest size limit. */
async function isBundleManifest(dir: string): Promise<boolean> {
  const bytes = await readAtMost(join(dir, 'manifest.json'), DEFAULT_PARSE_LIMITS.maxBytes);
  const text = decodeManifestBytes(bytes, DEFAULT_PARSE_LIMITS);
  const doc = text.isOk() ? parseJsonText(text.value, DEFAULT_PARSE_LIMITS) : undefined;
  return doc !== undefined && doc.isOk() && isBundleDocument(doc.value);
}

/**
 * Refuses a package root where more than one file would be read as the
 * plugin's own manifest (review N6): the install reads the first of
 * {@link PACKAGE_MANIFEST_NAMES}, so a person reviewing the other (a
 * `plugin.toml` beside a GUM `manifest.json`) would accept other powers than
 * the install grants. An MCP Bundle's `manifest.json` is another format
 * altogether (what a bundle client reads), so a GUM manifest beside it is
 * not two answers to one question: the bundle is installed, as before.
 * Two GUM manifests are refused, beside a bundle's too.
 */
async function refuseAmbiguous(dir: string, found: readonly PackageManifestName[]): Promise<void> {
  const bundle = found[0] === 'manifest.json' && (await isBundleManifest(dir));
  const gum = bundle ? found.slice(1) : found;
  if (gum.length < 2) return;
  const [first, second] = gum;
  const read = bundle ? 'the install reads the MCP Bundle manifest.json and neither of them' : `the install would read only ${first ?? ''}`;
  refuse('PLUGIN_MANIFEST_AMBIGUOUS', `the package root holds ${gum.join(' and ')}: each would be read as the plugin's manifest, and ${read}`, {
    details: { manifest_files: [...gum], ...(bundle ? { bundle_manifest: 'manifest.json' } : {}) },
    hint: `Ship one manifest at the package root: remove ${second ?? ''} or ${first ?? ''}, whichever is not the plugin's, so that what a person reviews is what the host installs.`,
  });
}

/**
 * Finds the manifest at the root of an extracted tree. Archives are often
 * made of one folder (`package/`, `<name>-1.2.0/`): when `allowStrip` is set,
 * the root holds no manifest, and its one entry is a directory that does, that
 * directory becomes the package root. Only one level is stripped.
 */
export async function locatePackageRoot(tree: string, allowStrip: boolean): Promise<PackageRoot> {
  const top = await manifestIn(tree);
  if (top.manifest !== undefined) return { dir: tree, manifestFile: top.manifest };
  if (allowStrip && top.onlyDirectory !== undefined) {
    const inner = await manifestIn(join(tree, top.onlyDirectory));
    if (inner.manifest !== undefined) {
      return { dir: join(tree, top.onlyDirectory), manifestFile: inner.manifest, strippedTopDirectory: top.onlyDirectory };
    }
  }
  return refuse('PLUGIN_MANIFEST_NOT_FOUND', `no ${PACKAGE_MANIFEST_NAMES.join(', ')} at the package root`, {
    details: { looked_for: [...PACKAGE_MANIFEST_NAMES], top_level: top.names.slice(0, 20) },
  });
}
