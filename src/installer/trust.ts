/**
 * What a person is asked to trust before a plugin is installed: who owns
 * its namespace, its terms of service and risk statement, its license,
 * where it comes from and the powers it asks for. Installing a subprocess
 * plugin is running someone's code with your user's authority, so the
 * host application decides, through a callback, on this summary.
 */
import { readdir } from 'node:fs/promises';
import licenseFiles from '../../etc/license-files.json' with { type: 'json' };
import { riskRank } from '../manifest/model.js';
import type { ClientRequestKind, ConfirmationPolicy, DeclaredCapabilities, NormalizedManifest, PluginGrant, RiskClass } from '../manifest/model.js';
import type { PackageSourceKind } from './openPackageSource.js';
import type { PackageChange, RegistryChange } from './trustRegistry.js';

/** The facts an install asks acceptance for. */
export interface TrustRequest {
  /** The plugin id. */
  readonly plugin_id: string;
  /** The name people know it by. */
  readonly display_name: string;
  /** The version being installed. */
  readonly version: string;
  /** The publisher identity that will own the plugin's namespace; null for a first-party or undeclared one. */
  readonly namespace_owner: string | null;
  /** Terms-of-service status or link, as the manifest states it; null when it states none. */
  readonly tos: string | null;
  /** The risk statement, as the manifest states it; null when it states none. */
  readonly risk: string | null;
  /** The declared license; null when it declares none. */
  readonly license: string | null;
  /** Where the package comes from. */
  readonly source: PackageSourceKind;
  /**
   * The source itself: a directory's or an archive's path; for `npm`, the
   * `<name>@<version>` the registry resolved, or a local tarball's absolute
   * path, whose name, version and owner are then its own package.json's
   * claims, which nothing checks against the registry.
   */
  readonly source_path: string;
  /** The powers it will run with. */
  readonly capabilities: DeclaredCapabilities;
  /** Its tools and what each may do. */
  readonly tools: readonly { readonly name: string; readonly risk_class: RiskClass }[];
  /**
   * The credential names it needs (`needs_user_creds`), when it declares
   * any: the plugin gets their values, those stored with `setup` or, with
   * the host option `credentialsFromEnv`, the host environment's.
   */
  readonly credentials?: readonly string[];
  /**
   * `introspection` when the install asks before it starts a server that
   * ships no manifest once, with the network it grants, to list its tools:
   * `tools` is empty then (not listed yet), and once they are listed the
   * install asks again with them. Absent: the question before the install.
   */
  readonly stage?: 'introspection';
  /**
   * Present on an upgrade or reinstall that makes tools easier to call than
   * the version accepted before: a lower risk class, a new tool above `read`,
   * a dropped `high_stakes_write` confirmation. What is asked about, besides
   * any power the plugin did not have.
   */
  readonly risk_changes?: readonly ToolRiskChange[];
  /**
   * Present on an upgrade or reinstall that gives the plugin powers the
   * version accepted before did not have (the installed one's, or after a
   * remove those recorded with its owner): each new power, field by field.
   */
  readonly added_capabilities?: readonly AddedCapability[];
  /**
   * Present on an upgrade or reinstall of an npm registry package fetched
   * from another registry than the version accepted before (the npm.registry
   * option changed, or a name published on two registries): the same name
   * there may be another publisher's package, so this is asked as an owner
   * change is, whatever owner string the package claims.
   */
  readonly registry_change?: RegistryChange;
  /**
   * Present when the npm package installed is another one than the plugin id
   * was accepted as, claiming its id and namespace owner (the owner string is
   * the package's own claim): it would take over the plugin's data directory
   * and host env grants, so this is asked as an owner change is.
   */
  readonly package_change?: PackageChange;
}

/**
 * One power an upgrade gives a plugin beyond the version accepted before:
 * the whole network, a writable directory outside the old one, or one env
 * name, egress destination or client request kind it did not have; or one
 * credential name (`needs_user_creds`) it did not need, which a host with
 * `credentialsFromEnv` fills from its own environment unasked, as it passes
 * an `env_allow` name.
 */
export type AddedCapability =
  | { readonly field: 'network'; readonly value: true }
  | { readonly field: 'fs_write_dir' | 'env_allow' | 'egress' | 'needs_user_creds'; readonly value: string }
  | { readonly field: 'client_requests'; readonly value: ClientRequestKind };

/** How much a tool may do and whether its calls are confirmed: what `maxRisk` ceilings and confirmation prompts go by. */
export interface ToolRisk {
  /** The tool's risk class. */
  readonly risk_class: RiskClass;
  /** Its confirmation policy. */
  readonly confirmation_policy: ConfirmationPolicy;
}

/** A tool an upgrade makes easier to call: rated lower, added above `read`, or no longer confirmed. */
export interface ToolRiskChange {
  /** The tool's name, unprefixed. */
  readonly name: string;
  /**
   * The op id callers call the tool by in this version
   * (`plug.<plugin_id>.<...>`, as `host.call` takes it); it may differ from
   * `name` beyond its prefix (a TOML form may keep its `op_id` and rename
   * the tool).
   */
  readonly op_id: string;
  /**
   * How the version accepted before rated it; null for a tool it did not
   * have, or for a new tool the rating of the highest-rated tool the upgrade
   * drops, which it may be a rename of.
   */
  readonly from: ToolRisk | null;
  /** How this version rates it. */
  readonly to: ToolRisk;
}

/**
 * Decides whether to install a plugin, shown its {@link TrustRequest}:
 * true accepts; false (or a rejected promise) refuses the install with
 * PLUGIN_TRUST_DECLINED before anything is written.
 */
export type TrustCallback = (request: TrustRequest) => boolean | Promise<boolean>;

/** The summary of `manifest` a person accepts. */
export function trustRequestOf(
  manifest: NormalizedManifest,
  source: { readonly kind: PackageSourceKind; readonly path: string },
  capabilities: DeclaredCapabilities,
): TrustRequest {
  return {
    plugin_id: manifest.plugin_id,
    display_name: manifest.name,
    version: manifest.version,
    namespace_owner: manifest.namespace_owner ?? null,
    tos: manifest.tos ?? null,
    risk: manifest.risk ?? null,
    license: manifest.license ?? null,
    source: source.kind,
    source_path: source.path,
    capabilities,
    tools: manifest.tools.map((t) => ({ name: t.name, risk_class: t.risk_class })),
    ...(manifest.requirements.needs_user_creds.length === 0 ? {} : { credentials: manifest.requirements.needs_user_creds }),
  };
}

/**
 * The powers `next` gives a plugin that `installed` did not: the network, a
 * writable directory outside the installed one, an env name, an egress
 * destination or a client request kind it did not have, one entry each. An
 * egress destination counts only while neither has the whole network, which
 * covers every destination.
 */
export function addedCapabilities(installed: DeclaredCapabilities, next: DeclaredCapabilities): AddedCapability[] {
  const added = (had: readonly string[] | undefined, has: readonly string[] | undefined): string[] => [...new Set(has ?? [])].filter((item) => !(had ?? []).includes(item));
  const out: AddedCapability[] = [];
  if (next.network && !installed.network) out.push({ field: 'network', value: true });
  const writeDir = next.fs_write_dir;
  if (writeDir !== installed.fs_write_dir && installed.fs_write_dir !== '' && !writeDir.startsWith(`${installed.fs_write_dir}/`)) out.push({ field: 'fs_write_dir', value: writeDir });
  for (const value of added(installed.env_allow, next.env_allow)) out.push({ field: 'env_allow', value });
  if (!next.network && !installed.network) for (const value of added(installed.egress, next.egress)) out.push({ field: 'egress', value });
  const requests = (next.client_requests ?? []).filter((kind, i, all) => all.indexOf(kind) === i && !(installed.client_requests ?? []).includes(kind));
  for (const value of requests) out.push({ field: 'client_requests', value });
  return out;
}

/**
 * The credential names `next` needs that the version accepted before
 * (`installed`) did not, one `needs_user_creds` entry each. Counted whether
 * or not the host reads credentials from its environment: with
 * `credentialsFromEnv` the plugin gets the host's value of the name unasked;
 * without, a new secret the user must supply is still worth the question.
 */
export function addedCredentials(installed: readonly string[], next: readonly string[]): AddedCapability[] {
  return [...new Set(next)].filter((name) => !installed.includes(name)).map((value) => ({ field: 'needs_user_creds' as const, value }));
}

/**
 * Whether `next` gives a plugin a power `installed` did not (see
 * {@link addedCapabilities}). An upgrade that does is asked for acceptance
 * again, however its owner was accepted before.
 */
export function widensCapabilities(installed: DeclaredCapabilities, next: DeclaredCapabilities): boolean {
  return addedCapabilities(installed, next).length > 0;
}

/**
 * The added powers the caller did not grant on this install itself: a grant
 * names each power it gives (`grant.network`, the `fs_write_dir`, each env
 * name and client request kind; a granted egress list is the whole list the
 * plugin gets), and asking for a power is consenting to it. What is left
 * came from the package's declaration or the host default.
 */
export function ungrantedCapabilities(added: readonly AddedCapability[], grant: PluginGrant | undefined): AddedCapability[] {
  if (grant === undefined) return [...added];
  return added.filter((power) => {
    switch (power.field) {
      case 'network':
        return grant.network !== true;
      case 'fs_write_dir':
        return grant.fs_write_dir !== power.value;
      case 'env_allow':
        return !(grant.env_allow ?? []).includes(power.value);
      case 'egress':
        return grant.egress === undefined || grant.egress.length === 0;
      case 'client_requests':
        return !(grant.client_requests ?? []).includes(power.value);
      case 'needs_user_creds':
        // A grant has no credential field: only the package declares one, so no install names it as its own consent.
        return true;
    }
  });
}

/** One added power as people read it: `network`, `env_allow GITHUB_TOKEN`; a value beyond plain characters is quoted, so it cannot pose as more text. */
export function addedCapabilityText(power: AddedCapability): string {
  if (power.field === 'network') return 'network';
  return `${power.field} ${/^[\w.:*/-]+$/.test(power.value) ? power.value : JSON.stringify(power.value)}`;
}

/**
 * A tool as {@link riskLowerings} compares it: `id` is the identity callers,
 * `maxRisk` ceilings and confirmations address it by (its op id, or for an
 * owner record from before op ids were kept, its tool name); `name` is
 * shown.
 */
export type ComparedTool = ToolRisk & { readonly id: string; readonly name: string };

/** A tool of the version being installed, compared: `op_id`, as callers call it, is what a change reports. */
export type NextTool = ComparedTool & { readonly op_id: string };

/** Whether a tool rated `to` is easier to call than one rated `from`: a lower class, or a `high_stakes_write` confirmation dropped. */
function easierToCall(from: ToolRisk, to: ToolRisk): boolean {
  return riskRank(to.risk_class) < riskRank(from.risk_class) || (from.confirmation_policy === 'high_stakes_write' && to.confirmation_policy !== 'high_stakes_write');
}

/**
 * The tools `next` makes easier to call than `accepted`, matched by `id`
 * (the op id callers address, not the plugin's MCP-side tool name, which a
 * version may rename under the same op id): a lower risk class
 * (destructive → write or read, write → read), a new tool above `read`, or
 * a `high_stakes_write` confirmation dropped. A lower class passes `maxRisk`
 * ceilings (read is the default of calls and of gateways) that the accepted
 * class did not, and an unconfirmed tool runs unasked, so the owner string
 * that spares an upgrade's question does not spare these. A rename cannot
 * be told from a removal plus an addition, so when the upgrade drops a tool,
 * each new tool easier to call than the highest-rated dropped one is a
 * change from that rating (a new read tool then too). A higher class, or a
 * removed tool with no new one, makes nothing easier.
 */
export function riskLowerings(accepted: readonly ComparedTool[], next: readonly NextTool[]): ToolRiskChange[] {
  const before = new Map(accepted.map((t) => [t.id, t]));
  const nextIds = new Set(next.map((t) => t.id));
  const riskOf = (t: ToolRisk): ToolRisk => ({ risk_class: t.risk_class, confirmation_policy: t.confirmation_policy });
  // The dropped tool a new one could be renamed from: the one hardest to call (highest class, then confirmed).
  const rank = (t: ToolRisk): number => riskRank(t.risk_class) * 2 + (t.confirmation_policy === 'high_stakes_write' ? 1 : 0);
  const dropped = accepted.filter((t) => !nextIds.has(t.id)).reduce<ToolRisk | undefined>((top, t) => (top === undefined || rank(t) > rank(top) ? riskOf(t) : top), undefined);
  const changes: ToolRiskChange[] = [];
  for (const tool of next) {
    const had = before.get(tool.id);
    const to = riskOf(tool);
    if (had !== undefined) {
      if (easierToCall(had, to)) changes.push({ name: tool.name, op_id: tool.op_id, from: riskOf(had), to });
    } else if (dropped !== undefined && easierToCall(dropped, to)) {
      changes.push({ name: tool.name, op_id: tool.op_id, from: dropped, to });
    } else if (tool.risk_class !== 'read') {
      changes.push({ name: tool.name, op_id: tool.op_id, from: null, to });
    }
  }
  return changes;
}

/** A tool's rating in one word: its risk class, or `high_stakes_write` for a confirmed one. */
const ratingOf = (risk: ToolRisk): string => (risk.confirmation_policy === 'high_stakes_write' ? 'high_stakes_write' : risk.risk_class);

/** A name as text: beyond plain word characters it is quoted, so it cannot pose as more text. */
const quoted = (name: string): string => (/^[\w.-]+$/.test(name) ? name : JSON.stringify(name));

/**
 * One change as people read it: `name destructive→read`, `name new→write`;
 * with the op id when it does not end in the name (`search_v2 (op
 * plug.notes.search) destructive→read`), the id `host.call` and the
 * gateway's callers name.
 */
export function riskChangeText(change: ToolRiskChange): string {
  const { name, op_id: opId } = change;
  const op = opId === name || opId.endsWith(`.${name}`) ? '' : ` (op ${quoted(opId)})`;
  return `${quoted(name)}${op} ${change.from === null ? 'new' : ratingOf(change.from)}→${ratingOf(change.to)}`;
}

const LICENSE_NAMES: ReadonlySet<string> = new Set(licenseFiles.names.map((n) => n.toLowerCase()));

/** Whether a regular file at the package root is named as a license is (LICENSE, LICENCE, COPYING, with .md/.txt). */
export async function hasLicenseFile(root: string): Promise<boolean> {
  const entries = await readdir(root, { withFileTypes: true });
  return entries.some((e) => e.isFile() && LICENSE_NAMES.has(e.name.toLowerCase()));
}
