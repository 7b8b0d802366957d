/**
 * Admission of a call: whether the plugin may run now (quarantine,
 * credentials, activation), whether the caller accepts the tool's risk, and
 * whether a high-stakes write was confirmed.
 */
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import type { InstalledPlugin } from '../catalog/catalogContents.js';
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import { HostError, hostError } from '../errors/HostError.js';
import type { RiskClass } from '../manifest/model.js';
import { admitStart } from './CrashPolicy.js';
import { aliasesOf } from './credentials.js';
import { riskAllowed } from '../manifest/model.js';
import { crashStateOf } from './pluginState.js';

/** What a confirmation callback is asked. */
export interface ConfirmationRequest {
  /** The operation id. */
  readonly op_id: string;
  /** The plugin that would run it. */
  readonly plugin_id: string;
  /** The tool's risk class. */
  readonly risk_class: RiskClass;
  /** The arguments it would be called with: a frozen copy, which is what runs if the call is approved. */
  readonly args: unknown;
}

/**
 * Approves (`true`) or refuses a `high_stakes_write` call. A throw or
 * rejection refuses; a returned `HostError` refuses with that error (a
 * gateway returns PLUGIN_CONFIRMATION_UNAVAILABLE when its client cannot be asked).
 */
export type ConfirmationCallback = (request: ConfirmationRequest) => boolean | HostError | Promise<boolean | HostError>;

/**
 * Why a call of `plugin` must not run now, by status precedence, or
 * undefined: a quarantine (VARIANT_QUARANTINED), missing credentials
 * (PLUGIN_NEEDS_CONFIGURATION), an install after this host opened
 * (PLUGIN_PENDING_RESTART).
 */
export function startRefusal(plugin: InstalledPlugin, opId: string, now: number, pending: boolean): HostError | undefined {
  const id = plugin.plugin_id;
  const state = plugin.state;
  // The common case, a healthy active plugin, is decided without building its crash history.
  if (state !== undefined && state.quarantined_at === null && state.needs_configuration !== true && !pending) return undefined;
  if (state === undefined) {
    return hostError('VARIANT_QUARANTINED', `plugin '${id}' has no runtime state; reinstall it`, { details: { plugin_id: id, op_id: opId, reason: 'state_missing' } });
  }
  const admitted = admitStart(crashStateOf(state), now, id, 'VARIANT_QUARANTINED');
  if (admitted.isErr()) return admitted.error;
  if (state.needs_configuration === true) {
    return hostError('PLUGIN_NEEDS_CONFIGURATION', `plugin '${id}' needs its credentials; run setup`, {
      details: { plugin_id: id, op_id: opId, credential_aliases: aliasesOf(plugin, plugin.descriptor?.needs_user_creds ?? []) },
    });
  }
  if (pending) {
    return hostError('PLUGIN_PENDING_RESTART', `plugin '${id}' was installed after this host opened; it becomes callable on the next open`, {
      details: { plugin_id: id, op_id: opId },
    });
  }
  return undefined;
}

/** PLUGIN_RISK_NOT_ALLOWED when the tool's risk class is above what the caller accepts, else undefined. */
export function riskRefusal(opId: string, variant: CatalogVariant, maxRisk: RiskClass): HostError | undefined {
  if (riskAllowed(variant.risk_class, maxRisk)) return undefined;
  return hostError('PLUGIN_RISK_NOT_ALLOWED', `${opId} is a ${variant.risk_class} operation; the call accepts at most ${maxRisk}`, {
    details: { op_id: opId, risk_class: variant.risk_class, max_risk: maxRisk },
  });
}

/**
 * Asks `callback` to approve a high-stakes write; no callback, a refusal or a
 * failing callback is PLUGIN_CONFIRMATION_DENIED, a returned HostError is the refusal itself.
 */
export function confirm(callback: ConfirmationCallback | undefined, request: ConfirmationRequest): ResultAsync<void, HostError> {
  const denied = (why: string): HostError =>
    hostError('PLUGIN_CONFIRMATION_DENIED', `${request.op_id} needs confirmation: ${why}`, { details: { op_id: request.op_id, plugin_id: request.plugin_id } });
  if (callback === undefined) return errAsync(denied('no confirmation callback is configured'));
  return ResultAsync.fromPromise(
    (async () => callback(request))(),
    () => denied('the confirmation callback failed'),
  ).andThen((approved) => {
    if (approved === true) return okAsync(undefined);
    if (approved instanceof HostError) return errAsync(approved);
    return errAsync(denied('the confirmation callback refused it'));
  });
}

/**
 * A deep copy of `value` as JSON carries it (what a plugin is sent), frozen at
 * every level, or undefined when JSON cannot carry it (a BigInt).
 */
export function frozenJsonCopy(value: unknown): { readonly value: unknown } | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined;
  }
  return { value: text === undefined ? undefined : JSON.parse(text, (_key, parsed: unknown) => (typeof parsed === 'object' && parsed !== null ? Object.freeze(parsed) : parsed)) };
}
