/**
 * Seed 000 (GUM plugin contract): the contract's own rules hold for every
 * GUM-form manifest whatever preset the host runs under.
 */
import { describe, expect, it } from 'vitest';
import { ManifestValidator } from '../../src/manifest/ManifestValidator.js';
import { gumJson, gumTomlText, pairs } from '../manifest/helpers.js';

const neutral = new ManifestValidator({ preset: 'neutral' });

describe('seed 000 §2 manifest fields under the neutral preset', () => {
  it('§2 declared_capabilities.env_allow: GUM_PROFILE is refused with PLUGIN_ENV_PROHIBITED', () => {
    const doc = gumJson();
    doc.declared_capabilities = { ...(doc.declared_capabilities as object), env_allow: ['TZ', 'GUM_PROFILE'] };
    const report = neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow/1']]);
    expect(neutral.validateValue(doc, 'gum-json')._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('§2 declared_capabilities.env_allow: the _GUM* names are refused too', () => {
    const doc = gumJson();
    doc.declared_capabilities = { ...(doc.declared_capabilities as object), env_allow: ['_GUM_SESSION'] };
    expect(pairs(neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap().violations)).toEqual([['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow/0']]);
  });

  it('§2 cross-references, reserved first-party prefixes: plugin_id "gmail" is refused with PLUGIN_NAMESPACE_CONFLICT', () => {
    const doc = { ...gumJson(), plugin_id: 'gmail' };
    const report = neutral.inspectValue(doc, 'gum-json')._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/plugin_id']]);
  });

  it('§2 cross-references, reserved first-party prefixes: "gmail-labels" is reserved, "gmailer" is not', () => {
    expect(pairs(neutral.inspectValue({ ...gumJson(), plugin_id: 'gmail-labels' }, 'gum-json')._unsafeUnwrap().violations)).toEqual([
      ['PLUGIN_NAMESPACE_CONFLICT', '/plugin_id'],
    ]);
    expect(neutral.inspectValue({ ...gumJson(), plugin_id: 'gmailer' }, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });

  it('§2 the TOML form is held to the same rules (the plugin id is [plugin].name)', () => {
    const text = gumTomlText().replace('name = "fli"', 'name = "drive"');
    const report = neutral.inspectText(text, { form: 'gum-toml' })._unsafeUnwrap();
    expect(pairs(report.violations)).toEqual([['PLUGIN_NAMESPACE_CONFLICT', '/plugin/name']]);
  });

  it('§2 first-party bundled plugins may claim a reserved prefix', () => {
    const firstParty = new ManifestValidator({ preset: 'neutral', firstParty: true });
    expect(firstParty.inspectValue({ ...gumJson(), plugin_id: 'gmail' }, 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });

  it('§2 the valid example manifest still passes under neutral', () => {
    expect(neutral.inspectValue(gumJson(), 'gum-json')._unsafeUnwrap().violations).toEqual([]);
  });
});
