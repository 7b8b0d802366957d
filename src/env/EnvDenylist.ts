/**
 * The one source of truth for environment variable names a plugin may never
 * receive. The same rules serve install-time rejection ({@link EnvDenylist.check})
 * and the runtime scrub ({@link EnvDenylist.buildEnv}), so a name refused at
 * install can never slip in at spawn through another path.
 */
import { err, ok, type Result } from 'neverthrow';
import denylistData from '../../etc/env-denylist.json' with { type: 'json' };
import localeData from '../../etc/env-locale.json' with { type: 'json' };
import { HostError, hostError } from '../errors/HostError.js';
import { silentLogger, type Logger } from '../ports/ports.js';
import { isValidEnvName, isValidEnvValue, printableEnvName } from './envName.js';

/** A named rule set shipped in `etc/env-denylist.json` on top of the base rules. */
export type EnvDenylistPreset = 'gum' | 'neutral';

/** The manifest field an env name was declared in; it is named in messages. */
export type EnvNameField = 'needs_user_creds' | 'env_allow';

/** The rule that makes a name prohibited. */
export type EnvDenyRule =
  | { readonly kind: 'exact'; readonly name: string }
  | { readonly kind: 'prefix'; readonly prefix: string };

/** One name {@link EnvDenylist.check} refused, as listed in `details.entries`. */
export interface RejectedEnvEntry {
  /** The name as declared, with control characters escaped. */
  readonly name: string;
  /** `denylisted`: a rule matched; `invalid_name`: empty, or contains `=` or NUL. */
  readonly reason: 'denylisted' | 'invalid_name';
  /** The matching rule, for `denylisted` entries. */
  readonly rule?: EnvDenyRule;
  /** The user-facing sentence for this entry (the contract's canonical form for `denylisted`). */
  readonly message: string;
}

/** Options of {@link EnvDenylist}. */
export interface EnvDenylistOptions {
  /** Preset rules added to the base rules; `gum` (the default) adds the `GUM_` and `_GUM` prefixes. */
  readonly preset?: EnvDenylistPreset;
  /** The host application's own prefixes, e.g. `MYAPP_`; case-sensitive. */
  readonly extraPrefixes?: readonly string[];
  /** More exact names to deny; case-sensitive. */
  readonly extraExact?: readonly string[];
  /** Receives a warning (names only, never values) whenever the runtime scrub drops a name. */
  readonly logger?: Logger;
}

/** What {@link EnvDenylist.buildEnv} builds a plugin's environment from. */
export interface BuildEnvInput {
  /** The host's environment (usually `process.env`); only allow-listed names are read from it. */
  readonly parentEnv: Readonly<Record<string, string | undefined>>;
  /**
   * Names copied from `parentEnv` for every plugin; an entry ending in `*` is a
   * prefix (`MYAPP_*`). Defaults to `PATH`, `HOME`, `TMPDIR`, `LANG` and the
   * locale categories (`LC_ALL`, `LC_CTYPE`…, `etc/env-locale.json`). A value
   * of `LANG` or a locale category read this way passes only when it looks
   * like a locale name (`en_US.UTF-8`, `C.UTF-8`).
   */
  readonly allowPassThrough?: readonly string[];
  /** The plugin's declared `env_allow` names, copied from `parentEnv` when set there. */
  readonly envAllow?: readonly string[];
  /**
   * Credential values the user stored for this plugin, keyed by their
   * `needs_user_creds` name. A {@link EnvDenylist.isUserCredentialName} name
   * survives the scrub from here alone, so a caller must put here only
   * values of the secret store, never the host's environment, under such a name.
   */
  readonly credentials?: Readonly<Record<string, string>>;
  /** Values the host sets itself (data directory, locale…); they win over every other source. */
  readonly fixed?: Readonly<Record<string, string>>;
  /** The plugin's id, used in messages and logs. */
  readonly pluginId?: string;
}

/**
 * The names every plugin receives from the host's environment unless the host
 * says otherwise: `PATH`, `HOME`, `TMPDIR`, `LANG` and the POSIX and glibc
 * locale categories (`etc/env-locale.json`), not every `LC_` name: sshd's
 * usual `AcceptEnv LANG LC_*` lets an ssh client set any of those.
 */
export const DEFAULT_ENV_PASS_THROUGH: readonly string[] = Object.freeze(['PATH', 'HOME', 'TMPDIR', 'LANG', ...localeData.categories]);

// The variables whose value names a locale, passed through only when it looks like one (a path is a locale glibc loads).
const LOCALE_NAMES: ReadonlySet<string> = new Set(['LANG', ...localeData.categories]);
const LOCALE_VALUE = new RegExp(localeData.valuePattern);

interface DenylistFile {
  readonly exact: readonly string[];
  readonly prefixes: readonly string[];
  readonly user_credentials: readonly string[];
  readonly presets: Readonly<Record<EnvDenylistPreset, { readonly exact: readonly string[]; readonly prefixes: readonly string[] }>>;
}

const shipped: DenylistFile = denylistData;

// Seed 001 §2 names these, and no data edit may let a user store a value under one (the JSON is data, so this is
// code): its exact names and its GUM_ / _GUM prefixes, whatever preset the host runs.
const SEED_EXACT_NAMES: ReadonlySet<string> = new Set(['GOOGLE_APPLICATION_CREDENTIALS', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']);
const SEED_PREFIXES: readonly string[] = ['GUM_', '_GUM'];

/** Whether seed 001 itself prohibits `name` (its exact names and prefixes): never a stored credential's name. */
function isSeedRuleName(name: string): boolean {
  return SEED_EXACT_NAMES.has(name) || SEED_PREFIXES.some((prefix) => name.startsWith(prefix));
}

// The names of the host's own extension of the list that name a credential a service issues to its user
// (PERPLEXITY_API_KEY, GITHUB_TOKEN…): the host's environment never gives one to a plugin, but a user who stores a
// value under it for one plugin has handed that value to that plugin on purpose. The seed's own names, loader and
// runtime names, sockets and credential-file paths are never among them (test/env/userCredentials.test.ts).
const shippedUserCredentials: ReadonlySet<string> = new Set(shipped.user_credentials.filter((name) => shipped.exact.includes(name) && !isSeedRuleName(name)));

/**
 * Whether `name` is one of the shipped denylist's names a user may still give
 * one plugin as a credential stored for it (`etc/env-denylist.json`
 * `user_credentials`): such a value comes from the secret store only, never
 * from the host's environment. A host that denies the name itself (a preset or
 * its own additions) is asked through {@link EnvDenylist.isUserCredentialName}.
 */
export function isStoredOnlyCredentialName(name: string): boolean {
  return shippedUserCredentials.has(name);
}

/**
 * The remedy of a PLUGIN_ENV_PROHIBITED refusal of `names`: what to do
 * instead of granting or declaring them. A name a user may store for the
 * plugin is pointed at the credential way; any other is only dropped.
 *
 * @param pluginId - The plugin's id, or undefined while it is not known (an npm tarball before it is read).
 */
export function prohibitedEnvHint(names: readonly string[], denylist: EnvDenylist, pluginId: string | undefined): string {
  const storable = names.filter((name) => denylist.isUserCredentialName(name)).map(printableEnvName);
  const never = names.filter((name) => !denylist.isUserCredentialName(name)).map(printableEnvName);
  const id = pluginId === undefined ? '<plugin>' : printableEnvName(pluginId);
  const named = pluginId === undefined ? 'the plugin' : `'${id}'`;
  const parts: string[] = [];
  if (never.length > 0) {
    parts.push(
      `Drop ${never.join(', ')} from the grant and the manifest: no plugin ever receives ${never.length === 1 ? 'it' : 'them'}, from the host's environment or from a stored credential (if you need an OAuth credential, declare it under requirements.credential_descriptors with a name of its own instead).`,
    );
  }
  if (storable.length > 0) {
    parts.push(
      `Drop ${storable.join(', ')} from the grant (env_allow, --grant-env): the host's environment never passes ${storable.length === 1 ? 'it' : 'them'} to a plugin. To give ${named} a value of its own, declare ${storable.length === 1 ? 'the name' : 'the names'} under requirements.needs_user_creds with a credential descriptor (for an npm server, in the manifest it is installed with: --manifest, the manifest install option), then store the value for this plugin alone: \`setup ${id}\`.`,
    );
  }
  return parts.join(' ');
}

/**
 * The contract's canonical sentence for a prohibited name:
 * `PLUGIN_ENV_PROHIBITED: <field> entry '<name>' on plugin '<plugin>' is a prohibited env var name.`
 */
export function prohibitedEnvMessage(field: EnvNameField, name: string, pluginId: string): string {
  return `PLUGIN_ENV_PROHIBITED: ${field} entry '${printableEnvName(name)}' on plugin '${printableEnvName(pluginId)}' is a prohibited env var name.`;
}

function invalidEnvNameMessage(field: EnvNameField, name: string, pluginId: string | undefined): string {
  const where = pluginId === undefined ? '' : ` on plugin '${printableEnvName(pluginId)}'`;
  return `PLUGIN_ENV_PROHIBITED: ${field} entry '${printableEnvName(name)}'${where} is not a valid env var name.`;
}

function invalidOptions(message: string): HostError {
  return hostError('HOST_INVALID_OPTIONS', message);
}

interface PassThroughRules {
  readonly exact: ReadonlySet<string>;
  readonly prefixes: readonly string[];
}

function parsePassThrough(patterns: readonly string[]): Result<PassThroughRules, HostError> {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const pattern of patterns) {
    const isPrefix = pattern.endsWith('*');
    const body = isPrefix ? pattern.slice(0, -1) : pattern;
    // A bare `*` would hand the whole parent environment to the plugin.
    if (!isValidEnvName(body)) {
      return err(invalidOptions(`allowPassThrough entry '${printableEnvName(pattern)}' is not an env var name or a non-empty prefix ending in '*'.`));
    }
    if (isPrefix) prefixes.push(body);
    else exact.add(body);
  }
  return ok({ exact, prefixes });
}

/**
 * Prohibited environment variable names: exact names and prefixes, matched
 * case-sensitively, from `etc/env-denylist.json`, a preset, and the host's
 * own additions.
 */
export class EnvDenylist {
  readonly #exact: ReadonlySet<string>;
  readonly #prefixes: readonly string[];
  readonly #userCredentials: ReadonlySet<string>;
  readonly #logger: Logger;

  /**
   * Builds a denylist; prefer {@link EnvDenylist.create} when options come from
   * user configuration.
   *
   * @throws {@link HostError} `HOST_INVALID_OPTIONS` when the preset is unknown or
   * an extra name or prefix is empty or contains `=` or NUL.
   */
  constructor(options: EnvDenylistOptions = {}) {
    const preset = options.preset ?? 'gum';
    const presetRules = Object.hasOwn(shipped.presets, preset) ? shipped.presets[preset] : undefined;
    if (presetRules === undefined) throw invalidOptions(`Unknown env denylist preset '${String(preset)}'; use 'gum' or 'neutral'.`);
    const extraPrefixes = options.extraPrefixes ?? [];
    const extraExact = options.extraExact ?? [];
    for (const name of [...extraPrefixes, ...extraExact]) {
      if (!isValidEnvName(name)) {
        throw invalidOptions(`Env denylist entry '${printableEnvName(name)}' is empty or contains '=' or NUL.`);
      }
    }
    this.#exact = new Set([...shipped.exact, ...presetRules.exact, ...extraExact]);
    this.#prefixes = [...new Set([...shipped.prefixes, ...presetRules.prefixes, ...extraPrefixes])];
    // A name the host or its preset denies on its own account stays denied from every source.
    const ownRules = new Set([...presetRules.exact, ...extraExact]);
    const ownPrefixes = [...presetRules.prefixes, ...extraPrefixes];
    this.#userCredentials = new Set([...shippedUserCredentials].filter((name) => !ownRules.has(name) && !ownPrefixes.some((p) => name.startsWith(p))));
    this.#logger = options.logger ?? silentLogger;
  }

  /** Builds a denylist, returning invalid options as an error instead of throwing. */
  static create(options: EnvDenylistOptions = {}): Result<EnvDenylist, HostError> {
    try {
      return ok(new EnvDenylist(options));
    } catch (cause) {
      if (cause instanceof HostError) return err(cause);
      throw cause;
    }
  }

  /** The exact names denied, sorted. */
  get exactNames(): readonly string[] {
    return [...this.#exact].sort();
  }

  /** The prefixes denied, sorted. */
  get prefixes(): readonly string[] {
    return [...this.#prefixes].sort();
  }

  /** The rule that denies `name`, or `undefined` when it is allowed. */
  ruleFor(name: string): EnvDenyRule | undefined {
    if (this.#exact.has(name)) return { kind: 'exact', name };
    const prefix = this.#prefixes.find((p) => name.startsWith(p));
    return prefix === undefined ? undefined : { kind: 'prefix', prefix };
  }

  /** Whether `name` must never reach a plugin from the host's environment (nor, unless {@link EnvDenylist.isUserCredentialName}, from anywhere). */
  isProhibited(name: string): boolean {
    return this.ruleFor(name) !== undefined;
  }

  /**
   * Whether `name` is denied only as a host value: a user may still store a
   * credential under it for one plugin (declared in `needs_user_creds`), and
   * that stored value reaches that plugin. Never true for the GUM contract's
   * own names, nor for a name the host's preset or additions deny.
   */
  isUserCredentialName(name: string): boolean {
    return this.#userCredentials.has(name);
  }

  /**
   * The rule that refuses `name` when a manifest declares it in `field`:
   * every denylisted name in `env_allow` (a grant of the host's value), and in
   * `needs_user_creds` all but {@link EnvDenylist.isUserCredentialName} names.
   */
  ruleIn(field: EnvNameField, name: string): EnvDenyRule | undefined {
    if (field === 'needs_user_creds' && this.isUserCredentialName(name)) return undefined;
    return this.ruleFor(name);
  }

  /**
   * Install-time check of the names a manifest declares in `field`. Fails with
   * `PLUGIN_ENV_PROHIBITED` listing every refused name in `details.entries`;
   * the message is one canonical sentence per refused name, one per line,
   * and the hint says what to do instead (`prohibitedEnvHint`).
   *
   * @param hintPluginId - The id the hint names (`setup <id>`) when it is not `pluginId`; `null` when no id is known yet.
   */
  check(pluginId: string, names: readonly string[], field: EnvNameField, hintPluginId?: string | null): Result<void, HostError> {
    const entries: RejectedEnvEntry[] = [];
    for (const name of new Set(names)) {
      if (!isValidEnvName(name)) {
        entries.push({ name: printableEnvName(name), reason: 'invalid_name', message: invalidEnvNameMessage(field, name, pluginId) });
        continue;
      }
      const rule = this.ruleIn(field, name);
      if (rule !== undefined) {
        entries.push({ name: printableEnvName(name), reason: 'denylisted', rule, message: prohibitedEnvMessage(field, name, pluginId) });
      }
    }
    if (entries.length === 0) return ok(undefined);
    const denied = [...new Set(names)].filter((name) => isValidEnvName(name) && this.ruleIn(field, name) !== undefined);
    return err(
      hostError('PLUGIN_ENV_PROHIBITED', entries.map((e) => e.message).join('\n'), {
        details: { plugin_id: pluginId, field, entries },
        ...(denied.length === 0 ? {} : { hint: prohibitedEnvHint(denied, this, hintPluginId === null ? undefined : (hintPluginId ?? pluginId)) }),
      }),
    );
  }

  /**
   * Builds a plugin's environment. Only allow-listed and `envAllow` names are
   * read from `parentEnv`; credentials and fixed values are added on top; then
   * every denylisted name is removed whatever its source, so a manifest or a
   * host bug can never forward one, except a stored credential under a
   * {@link EnvDenylist.isUserCredentialName} name: the user's own gift to this
   * plugin, not the host's value.
   */
  buildEnv(input: BuildEnvInput): Result<Record<string, string>, HostError> {
    const passThrough = parsePassThrough(input.allowPassThrough ?? DEFAULT_ENV_PASS_THROUGH);
    if (passThrough.isErr()) return err(passThrough.error);
    const { pluginId } = input;

    const envAllow = new Set<string>();
    for (const name of input.envAllow ?? []) {
      if (!isValidEnvName(name)) return err(hostError('PLUGIN_ENV_PROHIBITED', invalidEnvNameMessage('env_allow', name, pluginId)));
      envAllow.add(name);
    }
    const credentials = Object.entries(input.credentials ?? {});
    for (const [name, value] of credentials) {
      if (!isValidEnvName(name)) return err(hostError('PLUGIN_ENV_PROHIBITED', invalidEnvNameMessage('needs_user_creds', name, pluginId)));
      if (!isValidEnvValue(value)) return err(invalidOptions(`The credential value for '${printableEnvName(name)}' contains NUL.`));
    }
    const fixed = Object.entries(input.fixed ?? {});
    for (const [name, value] of fixed) {
      if (!isValidEnvName(name)) return err(invalidOptions(`Fixed env name '${printableEnvName(name)}' is empty or contains '=' or NUL.`));
      if (!isValidEnvValue(value)) return err(invalidOptions(`The fixed value for '${printableEnvName(name)}' contains NUL.`));
    }

    const env = new Map<string, string>();
    const unlikeLocales: string[] = [];
    for (const name of Object.keys(input.parentEnv)) {
      const value = input.parentEnv[name];
      if (value === undefined || !isValidEnvName(name)) continue;
      const passed = passThrough.value.exact.has(name) || passThrough.value.prefixes.some((p) => name.startsWith(p));
      if (!envAllow.has(name) && !passed) continue;
      // A granted name is the user's to give as it is; one every plugin gets must hold what its name says.
      if (!envAllow.has(name) && LOCALE_NAMES.has(name) && !LOCALE_VALUE.test(value)) {
        unlikeLocales.push(name);
        continue;
      }
      if (!isValidEnvValue(value)) return err(invalidOptions(`The host environment value of '${printableEnvName(name)}' contains NUL.`));
      env.set(name, value);
    }
    const given = new Set<string>();
    for (const [name, value] of credentials) {
      env.set(name, value);
      given.add(name);
    }
    for (const [name, value] of fixed) {
      env.set(name, value);
      given.delete(name);
    }

    if (unlikeLocales.length > 0) {
      this.#logger.warn({ plugin_id: pluginId, names: unlikeLocales }, 'Locale variables whose value is no locale name were not passed to a plugin.');
    }
    // A stored credential is kept under its name only when it is still the value in the environment (no fixed value replaced it).
    const scrubbed = [...env.keys()].filter((name) => this.isProhibited(name) && !(given.has(name) && this.isUserCredentialName(name)));
    for (const name of scrubbed) env.delete(name);
    if (scrubbed.length > 0) {
      this.#logger.warn(
        { plugin_id: pluginId, names: scrubbed.map(printableEnvName) },
        'Denylisted env names were scrubbed from a plugin environment.',
      );
    }
    return ok(Object.fromEntries([...env].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
  }
}
