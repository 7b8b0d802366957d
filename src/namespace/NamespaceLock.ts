/**
 * Who may claim which plugin id. A plugin's operations are named
 * `plug.<plugin_id>.<tool>`, so the plugin id is the namespace it claims.
 * Reserved first-party prefixes are closed to third parties, and the first
 * `namespace_owner` recorded for an id keeps it, across removal, until the
 * lock's owners record is edited on purpose.
 */
import { err, ok, type Result } from 'neverthrow';
import reservedData from '../../etc/reserved-namespaces.json' with { type: 'json' };
import { HostError, hostError } from '../errors/HostError.js';
import { systemClock, type Clock } from '../ports/ports.js';

/** A named reserved-prefix list shipped in `etc/reserved-namespaces.json`. */
export type ReservedNamespacePreset = 'gum' | 'neutral';

/** The kind of profile a lock belongs to; only `dev` accepts the conflict override. */
export type ProfileKind = 'dev' | 'standard';

/** The ownership of one plugin id, as persisted in `plugins.lock`. */
export interface NamespaceOwnerRecord {
  /** The publisher identity that owns the id (reverse-DNS or registry identity). */
  readonly namespace_owner?: string;
  /** Set when a bundled first-party plugin holds the id. */
  readonly first_party?: true;
  /** When the owner was first recorded, as an ISO 8601 timestamp. */
  readonly first_recorded_at?: string;
  /**
   * The fingerprint of the key that signed the plugin when it was last
   * removed: its next install must be signed by that key unless the caller
   * allows a signer change (its data and credentials outlive the remove).
   */
  readonly signer?: string;
}

/** Every recorded owner, keyed by plugin id; a plain JSON object. */
export type NamespaceOwners = Readonly<Record<string, NamespaceOwnerRecord>>;

/** A plugin's request to use its id as a namespace. */
export interface NamespaceClaim {
  /** The plugin id, i.e. the `plug.<plugin_id>.` operation prefix. */
  readonly plugin_id: string;
  /** The manifest's `namespace_owner`; required unless `firstParty`. */
  readonly namespace_owner?: string;
  /** Whether the plugin is bundled first-party code reviewed with the host. */
  readonly firstParty?: boolean;
  /** The dev-only override that lets an install proceed despite another recorded owner. */
  readonly devAllowNamespaceConflict?: boolean;
}

/** Why a claim was refused, in `details.reason`. */
export type NamespaceConflictReason = 'reserved_prefix' | 'owner_missing' | 'owner_mismatch';

/** Options of {@link NamespaceLock}. */
export interface NamespaceLockOptions {
  /** The profile's kind; the conflict override is refused unless it is `dev`. */
  readonly profileKind: ProfileKind;
  /** Which shipped reserved list applies; `gum` (the default) reserves Google service prefixes. */
  readonly preset?: ReservedNamespacePreset;
  /** The host's own reserved prefixes, added to the preset. */
  readonly reserved?: readonly string[];
  /** Stamps `first_recorded_at`. */
  readonly clock?: Clock;
}

const shippedPresets: Readonly<Record<ReservedNamespacePreset, readonly string[]>> = reservedData.presets;

/** The reserved prefixes of a shipped preset. */
export function reservedNamespacePreset(preset: ReservedNamespacePreset): readonly string[] {
  return [...shippedPresets[preset]];
}

function conflict(reason: NamespaceConflictReason, message: string, details: Record<string, unknown>): HostError {
  return hostError('PLUGIN_NAMESPACE_CONFLICT', message, { details: { reason, ...details } });
}

/**
 * Namespace ownership rules over an owners record that the catalog persists.
 * Pure: it reads the record it is given and returns a new one.
 */
export class NamespaceLock {
  readonly #reserved: readonly string[];
  readonly #profileKind: ProfileKind;
  readonly #clock: Clock;

  /**
   * Builds a lock for one profile; prefer {@link NamespaceLock.create} when
   * options come from user configuration.
   *
   * @throws {@link HostError} `HOST_INVALID_OPTIONS` for an unknown preset or an empty reserved prefix.
   */
  constructor(options: NamespaceLockOptions) {
    const preset = options.preset ?? 'gum';
    const presetList = Object.hasOwn(shippedPresets, preset) ? shippedPresets[preset] : undefined;
    if (presetList === undefined) {
      throw hostError('HOST_INVALID_OPTIONS', `Unknown reserved namespace preset '${String(preset)}'; use 'gum' or 'neutral'.`);
    }
    const extra = options.reserved ?? [];
    if (extra.some((p) => p.length === 0)) throw hostError('HOST_INVALID_OPTIONS', 'A reserved namespace prefix is empty.');
    this.#reserved = [...new Set([...presetList, ...extra])];
    this.#profileKind = options.profileKind;
    this.#clock = options.clock ?? systemClock;
  }

  /** Builds a lock, returning invalid options as an error instead of throwing. */
  static create(options: NamespaceLockOptions): Result<NamespaceLock, HostError> {
    try {
      return ok(new NamespaceLock(options));
    } catch (cause) {
      if (cause instanceof HostError) return err(cause);
      throw cause;
    }
  }

  /** The reserved prefixes in force, sorted. */
  get reserved(): readonly string[] {
    return [...this.#reserved].sort();
  }

  /**
   * The reserved prefix a plugin id falls under, if any: the id equals the
   * prefix or starts with the prefix followed by `-` (`gmail`, `gmail-labels`;
   * not `gmailer`).
   */
  reservedPrefixOf(pluginId: string): string | undefined {
    return this.#reserved.find((p) => pluginId === p || pluginId.startsWith(`${p}-`));
  }

  /** The recorded ownership of a plugin id, if any. */
  ownerOf(pluginId: string, owners: NamespaceOwners): NamespaceOwnerRecord | undefined {
    return Object.hasOwn(owners, pluginId) ? owners[pluginId] : undefined;
  }

  /**
   * Whether the claim may proceed against the recorded owners. Checks, in order:
   * the override is only used on a dev profile, a reserved prefix needs
   * `firstParty`, a third party must name its `namespace_owner`, and a
   * recorded owner must match (the dev override skips only this last check).
   */
  check(claim: NamespaceClaim, owners: NamespaceOwners): Result<void, HostError> {
    const { plugin_id } = claim;
    const firstParty = claim.firstParty === true;
    if (claim.devAllowNamespaceConflict === true && this.#profileKind !== 'dev') {
      return err(
        hostError(
          'HOST_INVALID_OPTIONS',
          `The dev namespace-conflict override was requested for plugin '${plugin_id}', but this is a ${this.#profileKind} profile; it is accepted only on a dev profile.`,
          { details: { plugin_id, profile_kind: this.#profileKind } },
        ),
      );
    }
    const reservedPrefix = this.reservedPrefixOf(plugin_id);
    if (reservedPrefix !== undefined && !firstParty) {
      return err(
        conflict('reserved_prefix', `Plugin id '${plugin_id}' uses the reserved first-party prefix '${reservedPrefix}'; only bundled first-party plugins may claim it.`, {
          plugin_id,
          reserved_prefix: reservedPrefix,
        }),
      );
    }
    const owner = claim.namespace_owner;
    const hasOwner = owner !== undefined && owner.trim().length > 0;
    if (!firstParty && !hasOwner) {
      return err(
        conflict('owner_missing', `Plugin '${plugin_id}' is a third-party plugin and must declare namespace_owner.`, { plugin_id }),
      );
    }
    const recorded = this.ownerOf(plugin_id, owners);
    if (recorded === undefined || this.#sameOwner(recorded, claim)) return ok(undefined);
    if (claim.devAllowNamespaceConflict === true) return ok(undefined);
    const recordedOwner = recorded.first_party === true ? 'first-party' : (recorded.namespace_owner ?? '');
    return err(
      conflict(
        'owner_mismatch',
        `Namespace '${plugin_id}' is owned by '${recordedOwner}' in this profile's lock; plugin declares namespace_owner '${owner ?? ''}'.`,
        { plugin_id, namespace_owner: owner ?? null, recorded_owner: recordedOwner },
      ),
    );
  }

  /**
   * Checks the claim and returns the owners record with it recorded. An
   * existing owner is never replaced, not even under the dev override.
   */
  claim(claim: NamespaceClaim, owners: NamespaceOwners): Result<NamespaceOwners, HostError> {
    const checked = this.check(claim, owners);
    if (checked.isErr()) return err(checked.error);
    if (this.ownerOf(claim.plugin_id, owners) !== undefined) return ok({ ...owners });
    const owner = claim.namespace_owner;
    const record: NamespaceOwnerRecord = {
      ...(owner !== undefined && owner.trim().length > 0 ? { namespace_owner: owner } : {}),
      ...(claim.firstParty === true ? { first_party: true as const } : {}),
      first_recorded_at: new Date(this.#clock.now()).toISOString(),
    };
    return ok({ ...owners, [claim.plugin_id]: record });
  }

  /**
   * The owners record after a plugin is removed: unchanged, because removal
   * keeps ownership so the same owner can reinstall without renewed consent.
   */
  release(_pluginId: string, owners: NamespaceOwners): NamespaceOwners {
    return { ...owners };
  }

  #sameOwner(recorded: NamespaceOwnerRecord, claim: NamespaceClaim): boolean {
    if (recorded.first_party === true) return claim.firstParty === true;
    return recorded.namespace_owner !== undefined && recorded.namespace_owner === claim.namespace_owner;
  }
}
