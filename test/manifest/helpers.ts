/** Builders of valid manifests that each test bends in one place. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Violation } from '../../src/manifest/violations.js';

export const fixturesRoot = join(import.meta.dirname, '../../fixtures/manifests');

/** A fresh copy of the valid GUM v1 example manifest. */
export function gumJson(): Record<string, unknown> {
  return JSON.parse(readFileSync(join(fixturesRoot, 'gum-json/valid/fli.json'), 'utf8')) as Record<string, unknown>;
}

/** The valid TOML contract fixture text. */
export function gumTomlText(): string {
  return readFileSync(join(fixturesRoot, 'gum-toml/valid/fli.toml'), 'utf8');
}

/** The `[code, pointer]` pairs of a violation list, in order. */
export function pairs(violations: readonly Violation[]): Array<[string, string]> {
  return violations.map((v) => [v.code, v.pointer]);
}
