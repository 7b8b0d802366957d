/**
 * The sandbox powers an installed plugin starts with, recomputed from what
 * the install pinned rather than taken from plugin-catalog.json: the
 * manifest in its install root (whose bytes the lock's tree digest covers
 * and every spawn re-checks) and the grant its plugins.lock row records.
 * The catalog's copy is what `info()` shows and the launcher builds the
 * sandbox from, so the two must agree: a catalog edited by hand to give a
 * plugin more (network, env names, a wider write dir) stops its start with
 * PLUGIN_CAPABILITIES_MISMATCH instead of widening it.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { err, ok, ResultAsync, type Result } from 'neverthrow';
import { BUNDLE_MANIFEST_FILE, isBundleDocument } from '../bundle/bundleManifest.js';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import { hostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { DEFAULT_CAPABILITIES, grantedCapabilities } from '../installer/grant.js';
import { isRecord } from '../manifest/access.js';
import { formFromFileName, formFromJsonDocument, MANIFEST_FILE_NAMES } from '../manifest/ManifestValidator.js';
import { chooseManifest } from '../manifest/manifestChoice.js';
import type { DeclaredCapabilities, NormalizedManifest } from '../manifest/model.js';
import { normalizeManifest } from '../manifest/normalize.js';
import { DEFAULT_PARSE_LIMITS, decodeManifestBytes, parseManifestText } from '../manifest/parse.js';
import { NEEDS_REVIEW } from '../installer/npmManifest.js';

/** What every manifest the host generates for an npm server starts its `risk` with (older installs carry older wording after it). */
const GENERATED_RISK_PREFIX = NEEDS_REVIEW.slice(0, NEEDS_REVIEW.indexOf('('));

type CapabilityBase = Pick<NormalizedManifest, 'plugin_id' | 'capabilities' | 'capabilities_source'>;

/** A manifest file as it was found: its path and stat identity (device, inode, size, modification and change times). */
interface FoundManifest {
  readonly path: string;
  readonly identity: string;
}

/**
 * The manifest of the install root as chooseManifest judges it (the
 * install's rule: PLUGIN_MANIFEST_AMBIGUOUS for a root holding two, which
 * only an install that predates the rule made), with the identity of the
 * file chosen. Searched here rather than through findManifest, so that the
 * stat that finds the file is also the one that dates it; the names are
 * stat'ed side by side, in one turn of the event loop.
 */
async function foundManifest(root: string): Promise<Result<FoundManifest, HostError>> {
  const infos = await Promise.all(MANIFEST_FILE_NAMES.map((name) => stat(join(root, name), { bigint: true }).catch(() => undefined)));
  const present = MANIFEST_FILE_NAMES.filter((_name, i) => infos[i]?.isFile() === true);
  const chosen = await chooseManifest(root, present, 'installed');
  if (chosen.isErr()) return err(chosen.error);
  const name = chosen.value;
  const info = name === undefined ? undefined : infos[MANIFEST_FILE_NAMES.indexOf(name)];
  if (name === undefined || info === undefined) return err(hostError('PLUGIN_MANIFEST_NOT_FOUND', `${root} holds none of ${MANIFEST_FILE_NAMES.join(', ')}`));
  return ok({ path: join(root, name), identity: `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}` });
}

/**
 * The base each plugin's last start read, by plugin id, with the manifest
 * file it came from. A start runs this check beside its launch, and the
 * spawn's gate waits for it: reading and parsing the manifest again took
 * six turns of an event loop the launch keeps busy, so the check ended
 * after the fork and held the plugin back. An unchanged file (same path and
 * identity; any write moves its change time) holds the same declaration;
 * the tree check of the same gate re-checks its bytes against the pin.
 */
const readBases = new Map<string, { readonly found: FoundManifest; readonly base: CapabilityBase }>();

/** The declaration the install started from: the manifest's own, or the host default for a source that declares none. */
async function pinnedBase(plugin: InstalledPlugin): Promise<Result<CapabilityBase, HostError>> {
  const found = await foundManifest(plugin.lock.binding.install_root);
  if (found.isErr()) return err(found.error);
  const read = readBases.get(plugin.plugin_id);
  if (read !== undefined && read.found.path === found.value.path && read.found.identity === found.value.identity) return ok(read.base);
  // Dated by the stat before the read: a write between the two moves the identity, and the next start reads again.
  const base = await readBase(plugin, found.value.path);
  if (base.isOk()) readBases.set(plugin.plugin_id, { found: found.value, base: base.value });
  else readBases.delete(plugin.plugin_id);
  return base;
}

/** Reads and normalizes the manifest at `path` (see {@link pinnedBase}). */
async function readBase(plugin: InstalledPlugin, path: string): Promise<Result<CapabilityBase, HostError>> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (cause) {
    return err(ioError('Reading', path, cause));
  }
  const named = formFromFileName(path);
  const text = decodeManifestBytes(bytes, DEFAULT_PARSE_LIMITS);
  const doc = text.andThen((t) => parseManifestText(t, named === 'gum-toml' ? 'toml' : 'json', DEFAULT_PARSE_LIMITS).mapErr((v) => v));
  if (doc.isErr() || !isRecord(doc.value)) {
    return err(hostError('PLUGIN_CAPABILITIES_MISMATCH', `the pinned manifest of plugin '${plugin.plugin_id}' (${path}) can no longer be read`, { details: { plugin_id: plugin.plugin_id, manifest: path } }));
  }
  const id = plugin.plugin_id;
  // An MCP Bundle and an introspected npm server declare nothing: the host default, which a grant widens.
  if (basename(path) === BUNDLE_MANIFEST_FILE && isBundleDocument(doc.value)) return ok({ plugin_id: id, capabilities: DEFAULT_CAPABILITIES, capabilities_source: 'host_default' });
  const manifest = normalizeManifest(doc.value, named ?? formFromJsonDocument(doc.value));
  const generated = typeof manifest.risk === 'string' && manifest.risk.startsWith(GENERATED_RISK_PREFIX);
  return ok({ plugin_id: id, capabilities: manifest.capabilities, ...(generated ? { capabilities_source: 'host_default' as const } : {}) });
}

/** A comparable form: lists as sets, fields in one order. */
function canonical(caps: DeclaredCapabilities): string {
  return JSON.stringify({
    network: caps.network,
    fs_write_dir: caps.fs_write_dir,
    env_allow: [...new Set(caps.env_allow)].sort(),
    egress: [...new Set(caps.egress ?? [])].sort(),
    client_requests: [...new Set(caps.client_requests ?? [])].sort(),
  });
}

/**
 * The capabilities `plugin` may start with: its pinned manifest narrowed or
 * widened by the recorded grant, exactly as the install computed them;
 * PLUGIN_CAPABILITIES_MISMATCH when the catalog records others.
 */
export function pinnedCapabilities(plugin: InstalledPlugin): ResultAsync<DeclaredCapabilities, HostError> {
  return new ResultAsync(
    (async (): Promise<Result<DeclaredCapabilities, HostError>> => {
      const base = await pinnedBase(plugin);
      if (base.isErr()) return err(base.error);
      const pinned = grantedCapabilities(base.value, plugin.lock.grant);
      const recorded = plugin.descriptor?.capabilities;
      if (pinned.isOk() && recorded !== undefined && canonical(pinned.value) === canonical(recorded)) return ok(pinned.value);
      return err(
        hostError('PLUGIN_CAPABILITIES_MISMATCH', `plugin '${plugin.plugin_id}' is recorded with sandbox powers its pinned manifest and install grant do not give; it does not start`, {
          details: { plugin_id: plugin.plugin_id, recorded: recorded ?? null, pinned: pinned.isOk() ? pinned.value : null, ...(pinned.isErr() ? { cause: pinned.error.code } : {}) },
        }),
      );
    })(),
  );
}
