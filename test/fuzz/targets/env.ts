/**
 * Names a plugin claims: environment variable names (install check and
 * runtime environment) and namespaces (plugin ids against recorded owners).
 */
import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { EnvDenylist, type BuildEnvInput } from '../../../src/env/EnvDenylist.js';
import { NamespaceLock, type NamespaceClaim, type NamespaceOwnerRecord, type NamespaceOwners } from '../../../src/namespace/NamespaceLock.js';
import { withOwnKey } from '../arbitraries/json.js';
import { caseVariant, envNameFrom } from '../arbitraries/strings.js';
import { expectResult, fuzzTarget } from '../harness.js';

const DENYLISTS = [new EnvDenylist(), new EnvDenylist({ preset: 'neutral' }), new EnvDenylist({ extraPrefixes: ['MYAPP_'], extraExact: ['SECRET'] })];
const SEEDS = [
  ...new Set([...DENYLISTS.flatMap((d) => [...d.exactNames, ...d.prefixes]), 'PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'FLI_TOKEN', 'MY_VAR']),
];
const envName = envNameFrom(SEEDS);
const envValue = fc.oneof({ weight: 9, arbitrary: fc.string({ maxLength: 12 }) }, { weight: 1, arbitrary: fc.constantFrom('a\0b', '\0') });

/** A record with own keys only, `__proto__` included, built without any setter. */
const envRecord = fc.array(fc.tuple(envName, envValue), { maxLength: 10 }).map((entries) => {
  const out: Record<string, string> = {};
  for (const [k, v] of entries) withOwnKey(out, k, v);
  return out;
});

const buildInput = fc.record(
  {
    parentEnv: envRecord,
    allowPassThrough: fc.array(fc.oneof(envName, envName.map((n) => `${n}*`), fc.constant('*')), { maxLength: 5 }),
    envAllow: fc.array(envName, { maxLength: 6 }),
    credentials: envRecord,
    fixed: envRecord,
    pluginId: fc.string({ maxLength: 8 }),
  },
  { requiredKeys: ['parentEnv'] },
);

const validName = (n: string): boolean => n.length > 0 && !n.includes('=') && !n.includes('\0');

const RESERVED = new NamespaceLock({ profileKind: 'standard' }).reserved;
const pluginId = fc.oneof(
  fc.constantFrom(...RESERVED),
  fc.tuple(fc.constantFrom(...RESERVED), fc.constantFrom('-x', 'x', '-', '.x', '_x')).map(([p, s]) => p + s),
  fc.tuple(fc.constantFrom(...RESERVED), fc.array(fc.boolean(), { minLength: 1, maxLength: 6 })).map(([p, m]) => caseVariant(p, m)),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'fli', ''),
  fc.string({ maxLength: 10 }),
);
const owner = fc.option(fc.constantFrom('io.example.a', 'io.example.b', '', '  ', '__proto__'), { nil: undefined });
const ownerRecord: fc.Arbitrary<NamespaceOwnerRecord> = fc.record(
  { namespace_owner: fc.constantFrom('io.example.a', 'io.example.b', ''), first_party: fc.constant(true as const), first_recorded_at: fc.constant('2026-01-01T00:00:00.000Z') },
  { requiredKeys: [] },
);
const owners: fc.Arbitrary<NamespaceOwners> = fc.array(fc.tuple(pluginId, ownerRecord), { maxLength: 6 }).map((entries) => {
  const out: Record<string, NamespaceOwnerRecord> = {};
  for (const [k, v] of entries) withOwnKey(out, k, v);
  return out;
});
const claim: fc.Arbitrary<NamespaceClaim> = fc
  .record({ plugin_id: pluginId, namespace_owner: owner, firstParty: fc.boolean(), devAllowNamespaceConflict: fc.boolean() })
  .map(({ namespace_owner, ...rest }) => (namespace_owner === undefined ? rest : { ...rest, namespace_owner }));
const LOCKS = [new NamespaceLock({ profileKind: 'standard' }), new NamespaceLock({ profileKind: 'dev', preset: 'neutral', reserved: ['acme'] })];

/** Registers the env and namespace targets. */
export function envTargets(): void {
  describe('env names and namespaces', () => {
    fuzzTarget(
      'env: check refuses exactly the invalid and denylisted names',
      [fc.nat({ max: DENYLISTS.length - 1 }), fc.array(envName, { maxLength: 8 }), fc.constantFrom('needs_user_creds' as const, 'env_allow' as const)],
      (which, names, field) => {
        const denylist = DENYLISTS[which]!;
        const result = denylist.check('plugin', names, field);
        expectResult(result, ['PLUGIN_ENV_PROHIBITED']);
        // needs_user_creds accepts the host's user-credential names (a value the user stores for the plugin); env_allow never does.
        const refused = names.filter((n) => !validName(n) || denylist.ruleIn(field, n) !== undefined);
        expect(result.isErr()).toBe(refused.length > 0);
        if (result.isErr()) expect((result.error.details.entries as unknown[]).length).toBe(new Set(refused).size);
      },
      { weight: 3 },
    );

    fuzzTarget(
      'env: buildEnv never outputs a denylisted name and agrees with check',
      [fc.nat({ max: DENYLISTS.length - 1 }), buildInput],
      (which, input) => {
        const denylist = DENYLISTS[which]!;
        const result = denylist.buildEnv(input as BuildEnvInput);
        expectResult(result, ['PLUGIN_ENV_PROHIBITED', 'HOST_INVALID_OPTIONS']);
        if (result.isErr()) return;
        const env = result.value;
        expect(Object.getPrototypeOf(env)).toBe(Object.prototype);
        for (const [name, value] of Object.entries(env)) {
          // The one denylisted name that passes: a user-credential name holding the credential handed in for it.
          const stored = denylist.isUserCredentialName(name) && input.credentials !== undefined && Object.hasOwn(input.credentials, name) && input.credentials[name] === value && !(input.fixed !== undefined && Object.hasOwn(input.fixed, name));
          expect(denylist.isProhibited(name) && !stored, `denylisted ${JSON.stringify(name)} reached the plugin`).toBe(false);
          expect(validName(name) && !value.includes('\0')).toBe(true);
        }
        // A name that passes the install check and is declared reaches the plugin with the parent's value.
        for (const name of input.envAllow ?? []) {
          const parentValue = Object.hasOwn(input.parentEnv, name) ? input.parentEnv[name] : undefined;
          const overridden = (input.credentials !== undefined && Object.hasOwn(input.credentials, name)) || (input.fixed !== undefined && Object.hasOwn(input.fixed, name));
          if (parentValue === undefined || overridden) continue;
          const passes = denylist.check('plugin', [name], 'env_allow').isOk();
          expect(Object.hasOwn(env, name), `declared ${JSON.stringify(name)}`).toBe(passes);
          if (passes) expect(env[name]).toBe(parentValue);
        }
      },
      { weight: 2 },
    );

    fuzzTarget(
      'env: isProhibited treats case variants as distinct names, consistently with check',
      [fc.nat({ max: DENYLISTS.length - 1 }), envName],
      (which, name) => {
        const denylist = DENYLISTS[which]!;
        const prohibited = denylist.isProhibited(name);
        expect(prohibited).toBe(denylist.exactNames.includes(name) || denylist.prefixes.some((p) => name.startsWith(p)));
        if (validName(name)) expect(denylist.check('p', [name], 'env_allow').isErr()).toBe(prohibited);
      },
      { weight: 3 },
    );

    fuzzTarget(
      'namespace: check and claim against hostile owner records',
      [fc.nat({ max: LOCKS.length - 1 }), claim, owners],
      (which, c, recorded) => {
        const lock = LOCKS[which]!;
        const result = lock.check(c, recorded);
        expectResult(result, ['PLUGIN_NAMESPACE_CONFLICT', 'HOST_INVALID_OPTIONS']);
        const claimed = lock.claim(c, recorded);
        expectResult(claimed, ['PLUGIN_NAMESPACE_CONFLICT', 'HOST_INVALID_OPTIONS']);
        expect(claimed.isOk()).toBe(result.isOk());
        if (result.isErr()) return;
        const firstParty = c.firstParty === true;
        if (!firstParty) {
          expect(lock.reservedPrefixOf(c.plugin_id), 'a third party claimed a reserved prefix').toBeUndefined();
          expect((c.namespace_owner ?? '').trim().length, 'a third party without namespace_owner').toBeGreaterThan(0);
        }
        const next = claimed._unsafeUnwrap();
        expect(Object.getPrototypeOf(next)).toBe(Object.prototype);
        expect(Object.hasOwn(next, c.plugin_id)).toBe(true);
        for (const key of Object.keys(recorded)) expect(next[key], 'an existing owner was replaced').toBe(recorded[key]);
      },
      { weight: 2 },
    );
  });
}
