/**
 * Which file of a plugin directory is its manifest: the one judgement the
 * install (the package root), `ManifestValidator.validateDirectory` and each
 * start's capability pin (`pinnedCapabilities`) make, so that none of them
 * reads one manifest of a directory that holds two (review N6: what a person
 * reviews must be what the host installs and starts with).
 */
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { isRecord } from './access.js';
import { DEFAULT_PARSE_LIMITS, decodeManifestBytes, parseJsonText } from './parse.js';
import { readAtMost } from './readAtMost.js';

/** Whether a parsed `manifest.json` is an MCP Bundle manifest rather than a GUM one. */
export function isBundleDocument(doc: unknown): boolean {
  if (!isRecord(doc) || !isRecord(doc['server']) || doc['manifest_schema_version'] !== undefined) return false;
  return typeof doc['manifest_version'] === 'string' || typeof doc['dxt_version'] === 'string';
}

/** Whether the `manifest.json` in `dir` is an MCP Bundle's, read as the bundle reader reads it: no more than the manifest size limit. */
async function isBundleManifest(dir: string): Promise<boolean> {
  const bytes = await readAtMost(join(dir, 'manifest.json'), DEFAULT_PARSE_LIMITS.maxBytes).catch(() => undefined);
  if (bytes === undefined) return false;
  const text = decodeManifestBytes(bytes, DEFAULT_PARSE_LIMITS);
  const doc = text.isOk() ? parseJsonText(text.value, DEFAULT_PARSE_LIMITS) : undefined;
  return doc !== undefined && doc.isOk() && isBundleDocument(doc.value);
}

/** Where the directory is judged: the wording of the refusal (what would read which file) and its remedy differ. */
export type ManifestChoiceContext = 'package' | 'installed';

/**
 * The manifest of `dir`, given the manifest file names it holds as regular
 * files, in the order of `PACKAGE_MANIFEST_NAMES` (`undefined` when none):
 * the one there is, or, beside an MCP Bundle's `manifest.json`, that bundle
 * (another format altogether: a GUM manifest beside it is not a second
 * answer). Two GUM manifests are PLUGIN_MANIFEST_AMBIGUOUS, beside a bundle's
 * too. `context` only words the error: a package is fixed by shipping one
 * manifest; an installed root holding two predates this rule (no install
 * since makes one, and the tree pin refuses files added later), and is fixed
 * by a reinstall.
 */
export async function chooseManifest<Name extends string>(dir: string, present: readonly Name[], context: ManifestChoiceContext): Promise<Result<Name | undefined, HostError>> {
  if (present.length < 2) return ok(present[0]);
  const bundle = present[0] === 'manifest.json' && (await isBundleManifest(dir));
  const gum = bundle ? present.slice(1) : present;
  if (gum.length < 2) return ok(present[0]);
  const [first, second] = gum;
  const details = { manifest_files: [...gum], ...(bundle ? { bundle_manifest: 'manifest.json' } : {}) };
  if (context === 'installed') {
    return err(
      hostError('PLUGIN_MANIFEST_AMBIGUOUS', `the install root ${dir} holds ${gum.join(' and ')}: each would be read as the plugin's manifest; it was installed before the host refused such packages, and it does not start`, {
        details: { ...details, install_root: dir },
        hint: `Install the plugin again from a package that ships one manifest (without ${second ?? ''} or ${first ?? ''}, whichever is not the plugin's), or remove it; the files of an install root are pinned and cannot be edited in place.`,
      }),
    );
  }
  const read = bundle ? 'the install reads the MCP Bundle manifest.json and neither of them' : `the install would read only ${first ?? ''}`;
  return err(
    hostError('PLUGIN_MANIFEST_AMBIGUOUS', `the package root holds ${gum.join(' and ')}: each would be read as the plugin's manifest, and ${read}`, {
      details,
      hint: `Ship one manifest at the package root: remove ${second ?? ''} or ${first ?? ''}, whichever is not the plugin's, so that what a person reviews is what the host installs.`,
    }),
  );
}
