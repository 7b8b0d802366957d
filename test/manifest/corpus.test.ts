/**
 * The fixture corpus: every valid manifest validates, every invalid one
 * fails with exactly the code and first pointer recorded in
 * fixtures/manifests/expectations.json, and every invalid fixture has an
 * expectation (so none goes unasserted).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors/registry.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { validateHandshakeManifest } from '../../src/manifest/handshake.js';
import type { ManifestForm } from '../../src/manifest/model.js';
import type { Violation } from '../../src/manifest/violations.js';

const root = join(import.meta.dirname, '../../fixtures/manifests');
interface Expectation {
  code: string;
  pointer: string;
  knownSchemaDigests?: Record<string, string>;
}
const expectations = JSON.parse(readFileSync(join(root, 'expectations.json'), 'utf8')) as Record<string, Expectation>;

const FORMS: ReadonlyArray<ManifestForm | 'handshake'> = ['gum-json', 'gum-toml', 'open-discovery', 'handshake'];
const list = (dir: string): string[] => readdirSync(join(root, dir)).sort();
const validatorFor = (form: ManifestForm | 'handshake'): ManifestValidator =>
  new ManifestValidator({ preset: form === 'gum-json' || form === 'gum-toml' ? 'gum' : 'neutral' });

function firstViolation(details: Readonly<Record<string, unknown>>): Violation {
  const violations = details.violations as Violation[];
  expect(violations.length).toBeGreaterThan(0);
  return violations[0]!;
}

describe('error code mapping: fixture corpus', () => {
  it('has an expectation for every invalid fixture and a fixture for every expectation', () => {
    const files = FORMS.flatMap((form) => list(`${form}/invalid`).map((f) => `${form}/invalid/${f}`));
    const dirs = list('plugins').map((d) => `plugins/${d}`);
    for (const file of files) expect(expectations, file).toHaveProperty([file]);
    for (const key of Object.keys(expectations)) expect([...files, ...dirs]).toContain(key);
  });

  it('names each invalid fixture after the registered code it expects', () => {
    for (const [file, expected] of Object.entries(expectations)) {
      expect(Object.keys(ERROR_CODES)).toContain(expected.code);
      if (file.includes('/invalid/')) expect(file.split('/').at(-1)!.startsWith(`${expected.code}-`)).toBe(true);
    }
  });

  it('covers every code the manifest validator can produce', () => {
    const codes = new Set(Object.values(expectations).map((e) => e.code));
    for (const code of [
      'PLUGIN_MANIFEST_INVALID',
      'PLUGIN_MANIFEST_SCHEMA_UNSUPPORTED',
      'PLUGIN_SHAPE_UNSUPPORTED',
      'PLUGIN_BINDING_INVALID',
      'PLUGIN_NAMESPACE_CONFLICT',
      'PLUGIN_FS_WRITE_OUTSIDE_SANDBOX',
      'PLUGIN_CREDENTIAL_DESCRIPTOR_INVALID',
      'PLUGIN_SCHEMA_REF_INVALID',
      'SCHEMA_REF_COLLISION',
      'PROFILE_STRIP_NULLS_UNSAFE',
      'PLUGIN_ENTRY_INVALID',
      'PLUGIN_DEPENDENCY_CYCLE',
      'PLUGIN_HANDSHAKE_FAILED',
    ]) {
      expect(codes, code).toContain(code);
    }
  });

  for (const form of FORMS.filter((f): f is ManifestForm => f !== 'handshake')) {
    describe(form, () => {
      for (const file of list(`${form}/valid`)) {
        it(`accepts valid/${file}`, () => {
          const result = validatorFor(form).validateText(readFileSync(join(root, form, 'valid', file)), { form, fileName: file });
          expect(result.isOk() ? 'ok' : result.error.toJSON()).toBe('ok');
          expect(result._unsafeUnwrap().form).toBe(form);
        });
      }
      for (const file of list(`${form}/invalid`)) {
        const expected = expectations[`${form}/invalid/${file}`];
        it(`rejects invalid/${file} with ${expected?.code} at "${expected?.pointer}"`, () => {
          const result = validatorFor(form).validateText(readFileSync(join(root, form, 'invalid', file)), { form, fileName: file });
          expect(result.isErr()).toBe(true);
          const error = result._unsafeUnwrapErr();
          expect(error.code).toBe(expected!.code);
          const first = firstViolation(error.details);
          expect({ code: first.code, pointer: first.pointer }).toEqual({ code: expected!.code, pointer: expected!.pointer });
        });
      }
    });
  }

  describe('handshake', () => {
    for (const file of list('handshake/valid')) {
      it(`accepts valid/${file}`, () => {
        const value: unknown = JSON.parse(readFileSync(join(root, 'handshake/valid', file), 'utf8'));
        expect(validateHandshakeManifest(value).isOk()).toBe(true);
      });
    }
    for (const file of list('handshake/invalid')) {
      const expected = expectations[`handshake/invalid/${file}`];
      it(`rejects invalid/${file} with ${expected?.code} at "${expected?.pointer}"`, () => {
        const value: unknown = JSON.parse(readFileSync(join(root, 'handshake/invalid', file), 'utf8'));
        const error = validateHandshakeManifest(value)._unsafeUnwrapErr();
        expect(error.code).toBe(expected!.code);
        expect(firstViolation(error.details).pointer).toBe(expected!.pointer);
      });
    }
  });

  describe('plugin directories (schema bundles read from disk)', () => {
    for (const dir of list('plugins')) {
      const expected = expectations[`plugins/${dir}`];
      it(expected ? `rejects ${dir} with ${expected.code} at "${expected.pointer}"` : `accepts ${dir}`, async () => {
        const validator = new ManifestValidator({
          preset: 'neutral',
          ...(expected?.knownSchemaDigests ? { knownSchemaDigests: new Map(Object.entries(expected.knownSchemaDigests)) } : {}),
        });
        const result = await validator.validateDirectory(join(root, 'plugins', dir));
        if (expected === undefined) {
          expect(result.isOk() ? 'ok' : result._unsafeUnwrapErr().toJSON()).toBe('ok');
          return;
        }
        const error = result._unsafeUnwrapErr();
        expect(error.code).toBe(expected.code);
        expect(firstViolation(error.details).pointer).toBe(expected.pointer);
      });
    }
  });
});
