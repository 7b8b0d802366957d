/**
 * The diagnosis of a start that failed while env names the plugin is granted
 * were missing from the environment it got. A published server that needs an
 * API key exits at start without it (airtable-mcp-server, @translated/lara-mcp);
 * the crash alone reads as the plugin's fault, when the remedy is the user's
 * environment or a stored value (etc/start-env-hints.json).
 */
import hints from '../../etc/start-env-hints.json' with { type: 'json' };
import { HostError, reworded } from '../errors/HostError.js';

/** The granted env names a launch of a plugin did not get a value for. */
export interface UnsetStartEnv {
  /** Names the install grants from the host's environment (`env_allow`) that it does not set. */
  readonly granted: readonly string[];
  /** Declared credentials (`needs_user_creds`) with neither a stored value nor one in the host's environment. */
  readonly credentials: readonly string[];
}

const FAILURE_CODES: ReadonlySet<string> = new Set(hints.failureCodes);
const START_PHASES: ReadonlySet<unknown> = new Set(hints.startPhases);

/**
 * What of the plugin's grant `env` (the environment a launch built) lacks:
 * exact `env_allow` names (a prefix entry, `LC_*`, names no one variable)
 * and declared credentials; undefined when it lacks none.
 */
export function unsetStartEnv(envAllow: readonly string[], declared: readonly string[], env: Readonly<Record<string, string>>): UnsetStartEnv | undefined {
  const absent = (name: string): boolean => !Object.hasOwn(env, name) || env[name] === '';
  const credentials = declared.filter(absent);
  const granted = envAllow.filter((name) => !name.endsWith('*') && !declared.includes(name) && absent(name));
  return granted.length === 0 && credentials.length === 0 ? undefined : { granted, credentials };
}

/** Whether `error` is a failed start: the process ended or broke its protocol before it served (or a report explaining such a crash). */
function failedStart(error: HostError): boolean {
  const crashed = FAILURE_CODES.has(error.code) || (error.cause instanceof HostError && error.cause.code === 'PLUGIN_CRASHED');
  return crashed && START_PHASES.has(error.details['phase'] ?? (error.cause instanceof HostError ? error.cause.details['phase'] : undefined));
}

/** What the plugin said of its failure: the failure's message and its stderr tail. */
function said(error: HostError): string {
  const tail = error.details['stderr_tail'];
  return `${error.message}\n${typeof tail === 'string' ? tail : ''}`;
}

/** Whether `text` holds `name` as a whole word (AIRTABLE_API_KEY does not hold API_KEY). */
function names(text: string, name: string): boolean {
  let at = text.indexOf(name);
  while (at !== -1) {
    const before = at === 0 ? '' : text.charAt(at - 1);
    const after = text.charAt(at + name.length);
    if (!/[A-Za-z0-9_]/.test(before) && !/[A-Za-z0-9_]/.test(after)) return true;
    at = text.indexOf(name, at + 1);
  }
  return false;
}

function filled(template: string, list: readonly string[], pluginId: string): string {
  const fields: Record<string, string> = { names: list.join(', '), was: list.length === 1 ? 'was' : 'were', plugin: pluginId, first: list[0] ?? '' };
  return template.replace(/\{(names|was|plugin|first)\}/g, (_match, key: string) => fields[key] ?? '');
}

/**
 * `error` with the unset names in `details.unset_env` and a hint naming the
 * remedy in front of its own, when it is a failed start and `unset` names
 * any; else `error` unchanged. The hint is firm about the names the plugin's
 * output names (it said what it missed) and conditional about the others (a
 * grant a plugin reads only when set, as a log level, is often unset).
 */
export function withUnsetEnvHint(error: HostError, pluginId: string, unset: UnsetStartEnv | undefined): HostError {
  if (unset === undefined || !failedStart(error)) return error;
  const text = said(error);
  const credentials = unset.credentials.filter((name) => names(text, name));
  const granted = unset.granted.filter((name) => names(text, name));
  const uncited = [...unset.credentials, ...unset.granted].filter((name) => !credentials.includes(name) && !granted.includes(name));
  const parts = [
    ...(credentials.length === 0 ? [] : [filled(hints.credentialHint, credentials, pluginId)]),
    ...(granted.length === 0 ? [] : [filled(hints.grantedHint, granted, pluginId)]),
    ...(uncited.length === 0 || credentials.length + granted.length > 0 ? [] : [filled(hints.uncitedHint, uncited, pluginId)]),
  ];
  return reworded(error, { hint: `${parts.join(' ')} ${error.hint}`, details: { ...error.details, unset_env: [...unset.credentials, ...unset.granted] } });
}

/**
 * Whether `error` is a failed start diagnosed as unset granted env
 * ({@link withUnsetEnvHint}) whose output names one of them: a configuration
 * problem, not a crash of the plugin's code. Unset names the output does not
 * name prove nothing (an optional grant), so that failure is the plugin's.
 */
export function isUnsetEnvStart(error: HostError): boolean {
  const unset = error.details['unset_env'];
  if (!Array.isArray(unset)) return false;
  const text = said(error);
  return unset.some((name) => typeof name === 'string' && names(text, name));
}
