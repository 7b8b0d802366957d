import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ENV_PASS_THROUGH, EnvDenylist } from '../../src/env/EnvDenylist.js';

const denylist = new EnvDenylist({ extraPrefixes: ['MYAPP_'] });

/** Names that hit every kind of rule, names that are allowed, and arbitrary strings. */
const envName = fc.oneof(
  fc.constantFrom(
    'PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'FLI_TOKEN', 'AWS_REGION', 'gum_profile', '__proto__', 'constructor',
    'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'GITHUB_TOKEN', 'PERPLEXITY_API_KEY', 'NODE_OPTIONS', 'LD_PRELOAD',
  ),
  fc.tuple(fc.constantFrom('GUM_', '_GUM', 'LD_', 'DYLD_', 'BASH_FUNC_', 'MYAPP_', 'LC_', ''), fc.string({ maxLength: 12 })).map(([p, s]) => p + s),
  fc.string({ maxLength: 16 }),
);
const envValue = fc.oneof({ weight: 9, arbitrary: fc.string({ maxLength: 16 }) }, { weight: 1, arbitrary: fc.constant('a\0b') });
const envRecord = fc.dictionary(envName, envValue, { maxKeys: 12 });
const passThrough = fc.oneof(
  fc.constant(undefined),
  fc.array(fc.oneof(envName, envName.map((n) => `${n}*`)), { maxLength: 6 }),
);

const buildInput = fc.record({
  parentEnv: envRecord,
  allowPassThrough: passThrough,
  envAllow: fc.array(envName, { maxLength: 8 }),
  credentials: envRecord,
  fixed: envRecord,
});

describe('env prohibited (prefix and exact): properties', () => {
  it('buildEnv never outputs a denylisted name, whatever the input, but a credential stored under a user-credential name', () => {
    fc.assert(
      fc.property(buildInput, ({ allowPassThrough, ...rest }) => {
        const result = denylist.buildEnv(allowPassThrough === undefined ? rest : { ...rest, allowPassThrough });
        if (result.isErr()) {
          expect(['PLUGIN_ENV_PROHIBITED', 'HOST_INVALID_OPTIONS']).toContain(result.error.code);
          return;
        }
        for (const [name, value] of Object.entries(result.value)) {
          // The one denylisted name that passes: a user-credential name whose value is the credential handed in for it.
          const storedCredential = denylist.isUserCredentialName(name) && Object.hasOwn(rest.credentials, name) && rest.credentials[name] === value && !Object.hasOwn(rest.fixed, name);
          expect(denylist.isProhibited(name) && !storedCredential, name).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('buildEnv only outputs names that were allow-listed, env_allow-ed, credentials or fixed', () => {
    fc.assert(
      fc.property(buildInput, ({ allowPassThrough, ...rest }) => {
        const patterns = allowPassThrough ?? DEFAULT_ENV_PASS_THROUGH;
        const result = denylist.buildEnv(allowPassThrough === undefined ? rest : { ...rest, allowPassThrough });
        if (result.isErr()) return;
        for (const [name, value] of Object.entries(result.value)) {
          const fromPatterns = patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));
          const declared =
            rest.envAllow.includes(name) || Object.hasOwn(rest.credentials, name) || Object.hasOwn(rest.fixed, name);
          expect(fromPatterns || declared, name).toBe(true);
          expect(name.length > 0 && !name.includes('=') && !name.includes('\0')).toBe(true);
          expect(value.includes('\0')).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('check refuses exactly the denylisted and invalid names', () => {
    fc.assert(
      fc.property(fc.array(envName, { maxLength: 8 }), (names) => {
        const bad = [...new Set(names)].filter((n) => denylist.isProhibited(n) || n === '' || n.includes('=') || n.includes('\0'));
        const result = denylist.check('p', names, 'env_allow');
        if (bad.length === 0) expect(result.isOk()).toBe(true);
        else expect((result._unsafeUnwrapErr().details.entries as unknown[]).length).toBe(bad.length);
      }),
      { numRuns: 500 },
    );
  });
});
