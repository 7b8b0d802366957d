/**
 * The npm registry as part of who publishes a package. A registry names a
 * package; the same name on another registry (a host whose npm.registry was
 * changed, a private name also published on the public registry by someone
 * else) is another publisher's package, whatever owner string it claims. So
 * an install of an npm registry package from another registry than the one
 * the plugin id was accepted from is judged as an owner change: asked, never
 * spared, and refused when no one can be asked.
 */
import npmSettings from '../../etc/npm-install.json' with { type: 'json' };
import { registryPackageName } from '../catalog/catalogContents.js';
import type { NamespaceOwnerEntry, PackageSource } from '../catalog/catalogTypes.js';

/** The registry an upgrade or reinstall of an npm package comes from, when it is not the one the version accepted before came from. */
export interface RegistryChange {
  /**
   * The registry the version accepted before came from; null for one
   * installed before registries were recorded, which counts as npm's default
   * registry (`https://registry.npmjs.org/`), and so differs from `to`.
   */
  readonly from: string | null;
  /** The registry this install fetched the package from. */
  readonly to: string;
}

/** The registry a package is counted from when its record names none: npm's default, which the host used unless told another. */
export const DEFAULT_NPM_REGISTRY: string = npmSettings.registry;

/** Where the version of a plugin id accepted before came from, as far as registries go: its registry, or null for an npm registry package recorded without one. */
export interface AcceptedOrigin {
  readonly registry: string | null;
  /** The npm package name it was installed as (the lock row's, or the owner record's after a remove), when recorded. */
  readonly name?: string;
}

/** Another npm package than the one a plugin id was accepted as, claiming the same id and owner. */
export interface PackageChange {
  /** The npm package name the version accepted before was installed as. */
  readonly from: string;
  /** The npm package name this install fetched. */
  readonly to: string;
}

/**
 * The registry origin of the version accepted before: the installed lock
 * row's (an `npm:<name>@<version>` source, with or without a recorded
 * registry), or after a remove the registry the owner record kept.
 * Undefined when it was no npm registry package, or the record says nothing
 * (a first install, a remove from before registries were kept): nothing to
 * compare a registry against.
 */
export function acceptedOriginOf(installed: PackageSource | undefined, owner: NamespaceOwnerEntry | undefined): AcceptedOrigin | undefined {
  if (installed !== undefined) {
    const name = registryPackageName(installed.source);
    if (name === undefined) return installed.registry === undefined ? undefined : { registry: installed.registry };
    return { registry: installed.registry ?? null, name };
  }
  if (owner?.registry === undefined) return undefined;
  return { registry: owner.registry, ...(owner.package_name === undefined ? {} : { name: owner.package_name }) };
}

/**
 * The package change of an install of the npm package `next` against the
 * version accepted before: undefined when either name is unknown (another
 * kind of source, a removed plugin) or both are the same package. The
 * namespace owner is the package's own claim, so a package of another name
 * claiming an installed plugin's id and owner (a typosquat, a "helper"
 * package) is another publisher's until someone says otherwise.
 */
export function packageChangeOf(accepted: AcceptedOrigin | undefined, next: string | undefined): PackageChange | undefined {
  if (next === undefined || accepted?.name === undefined || accepted.name === next) return undefined;
  return { from: accepted.name, to: next };
}

/** A registry URL compared: its scheme and host case-insensitively (as URL parsing does), with one trailing slash. */
function comparable(registry: string): string {
  let text = registry;
  try {
    text = new URL(registry).href;
  } catch {
    // A recorded registry that does not parse is compared as written.
  }
  return text.endsWith('/') ? text : `${text}/`;
}

/**
 * The registry change of an install from `next` (the registry npm fetched
 * an npm registry package from; undefined for every other source) against
 * the version accepted before: undefined when there is none to compare, or
 * both are the same registry.
 */
export function registryChangeOf(accepted: AcceptedOrigin | undefined, next: string | undefined): RegistryChange | undefined {
  if (next === undefined || accepted === undefined) return undefined;
  if (comparable(accepted.registry ?? DEFAULT_NPM_REGISTRY) === comparable(next)) return undefined;
  return { from: accepted.registry, to: next };
}

/** A registry change as people read it: `http://a/ → http://b/`, an unrecorded one as the default registry it is counted as. */
export function registryChangeText(change: RegistryChange): string {
  return `${change.from ?? `${DEFAULT_NPM_REGISTRY} (not recorded: installed before registries were)`} → ${change.to}`;
}
