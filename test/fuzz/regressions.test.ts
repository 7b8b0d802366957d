/**
 * Counterexamples the fuzz suite found, kept as plain tests so each fix
 * stays fixed whatever the seed of a later run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { parsePluginErrorEnvelope, mapPluginError } from '../../src/error-mapper/ErrorMapper.js';
import { hostError } from '../../src/errors/HostError.js';
import { parseChecksum } from '../../src/installer/checksum.js';
import { validateEntryName } from '../../src/installer/entryName.js';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { checkExecuteResponse, checkHandshakeResponse } from '../../src/shapes/handshake/handshakeChecks.js';

const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('fuzz regressions: error messages cannot drive a terminal', () => {
  it('escapes control characters in any HostError message, keeping tab and newline', () => {
    const e = hostError('SERVICE_DOWN', 'a\u0000b\u001b[2Jc\rd\u007fe\u009bf\tg\nh');
    expect(e.message).toBe('a\\x00b\\x1b[2Jc\\x0dd\\x7fe\\x9bf\tg\nh');
  });

  it.each([
    ['a manifest of one NUL byte', () => new ManifestValidator().validateText(new Uint8Array([0]), { form: 'gum-json' })._unsafeUnwrapErr()],
    ['a schema_ref with DEL', () => {
      const doc = JSON.parse(readFileSync(join(import.meta.dirname, '../../fixtures/manifests/gum-json/valid/fli-full.json'), 'utf8'));
      doc.advertised_tools[0].schema_ref = 'a\u007f';
      const error = new ManifestValidator().validateText(JSON.stringify(doc), { form: 'gum-json' })._unsafeUnwrapErr();
      expect(error.code).toBe('PLUGIN_SCHEMA_REF_INVALID');
      return error;
    }],
    ['a handshake line of one NUL', () => checkHandshakeResponse('\u0000', { protocolVersion: 'v1', allowedCapabilities: [], expectedCapabilities: [] })._unsafeUnwrapErr()],
    ['an execute line with an escape sequence', () => checkExecuteResponse('\u001b]0;x\u0007', 'r')._unsafeUnwrapErr()],
    ['a checksum with NUL', () => parseChecksum('\u0000')._unsafeUnwrapErr()],
  ])('%s', (_label, failure) => {
    const error = failure();
    expect(CONTROL.test(error.message), JSON.stringify(error.message)).toBe(false);
  });
});

describe('fuzz regressions: parsePluginErrorEnvelope returns a Result for hostile values', () => {
  it.each([
    ['a throwing getter', () => ({ get success(): never { throw new Error('getter'); } })],
    ['a throwing proxy', () => new Proxy({}, { get() { throw new Error('proxy'); } })],
  ])('%s', (_label, make) => {
    const parsed = parsePluginErrorEnvelope(make(), { plugin_id: 'p' });
    expect(parsed._unsafeUnwrapErr().code).toBe('SERVICE_DOWN');
    expect(parsed._unsafeUnwrapErr().details).toMatchObject({ plugin_id: 'p', envelope_error: 'unreadable value' });
    expect(mapPluginError(make()).code).toBe('SERVICE_DOWN');
  });
});

describe('fuzz regressions: archive entry names', () => {
  it.each(['./C:/manifest.json', '././c:', './Z:x/y'])('refuses %s, whose normalized form starts with a drive letter', (name) => {
    expect(validateEntryName(name)._unsafeUnwrapErr().reason).toBe('absolute_name');
  });

  it('refuses a drive-letter-like segment that is not first (a colon is never portable)', () => {
    expect(validateEntryName('./a/C:x')._unsafeUnwrapErr().reason).toBe('colon');
  });
});

describe('fuzz regressions: validateValue on values with null prototypes', () => {
  // FUZZ_RUNS=200000, fast-check seed 20726530, path 146415:6:13:9:11:6:13:6:6:22:22:22:22: smol-toml
  // builds tables without a prototype, and Ajv's uniqueItems equality called valueOf on them.
  const fliToml = readFileSync(join(import.meta.dirname, '../../fixtures/manifests/gum-toml/valid/fli.toml'), 'utf8');
  const twoEmptyTables = `${fliToml.replace('env_allow = []\n', '')}\n[[declared_capabilities.env_allow]]\n[[declared_capabilities.env_allow]]\n`;

  it('reports two empty env_allow tables parsed by smol-toml as duplicate items', () => {
    const parsed = parseToml(twoEmptyTables) as { declared_capabilities: { env_allow: object[] } };
    expect(Object.getPrototypeOf(parsed.declared_capabilities.env_allow[0])).toBeNull();
    const error = new ManifestValidator().validateValue(parsed, 'gum-toml')._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MANIFEST_INVALID');
    expect(error.details.violations).toContainEqual(expect.objectContaining({ pointer: '/declared_capabilities/env_allow', stage: 'structure' }));
    expect(new ManifestValidator().validateText(twoEmptyTables, { form: 'gum-toml' })._unsafeUnwrapErr().details.violations).toEqual(error.details.violations);
  });

  it('accepts a valid manifest built from null-prototype objects as the same manifest', () => {
    const plain = parseToml(fliToml);
    const nullPrototyped = JSON.parse(JSON.stringify(plain), (_key, value: unknown) =>
      typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.assign(Object.create(null), value) : value,
    ) as unknown;
    const validator = new ManifestValidator();
    expect(validator.validateValue(nullPrototyped, 'gum-toml')._unsafeUnwrap()).toEqual(validator.validateValue(plain, 'gum-toml')._unsafeUnwrap());
  });

  it('reports a value whose getter throws instead of throwing', () => {
    const doc = { get manifest_schema_version(): never { throw new Error('getter'); } };
    const error = new ManifestValidator().validateValue(doc, 'gum-toml')._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MANIFEST_INVALID');
    expect(error.details.violations).toEqual([expect.objectContaining({ stage: 'parse', pointer: '' })]);
  });

  it('reports an ordinary value whose getter throws only on a later read (validated in place) instead of throwing', () => {
    let reads = 0;
    const doc = {
      get manifest_schema_version(): number {
        reads += 1;
        if (reads > 2) throw new Error('third read');
        return 1;
      },
    };
    const error = new ManifestValidator().validateValue(doc, 'gum-json')._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_MANIFEST_INVALID');
    expect(error.details.violations).toEqual([expect.objectContaining({ stage: 'parse', message: expect.stringContaining('third read') })]);
  });
});
