/**
 * Host state read back from disk: the three catalog files, and canary
 * arguments with relative dates.
 */
import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { resolveRelativeDates } from '../../../src/host/relativeDates.js';
import { parseFile, type CatalogFileKind } from '../../../src/catalog/catalogFiles.js';
import { applyMutations, applyTextMutations, keysOf, mutation, textMutation, withOwnKey } from '../arbitraries/json.js';
import { expectResult, fuzzTarget } from '../harness.js';
import { pluginState } from '../../support/pluginState.js';

const SHA = 'a'.repeat(64);
const STAMP = { profile: 'default', install_generation: 3, txid: '0123456789abcdef0123456789abcdef', updated_at: '2026-05-19T00:00:00.000Z' };

/** One valid file of each kind, as the CatalogStore writes them. */
const VALID: Readonly<Record<CatalogFileKind, unknown>> = {
  catalog: {
    plugin_catalog_schema_version: 1,
    ...STAMP,
    variants: [
      { op_id: 'plug.fli.search', variant_id: 'plug.fli.search.v1', plugin_id: 'fli', tool_name: 'search', risk_class: 'read', confirmation_policy: 'none', schema_hashes: { 'fli.search.request': SHA }, backend_kind: 'mcp-plugin' },
    ],
    plugins: { fli: { plugin_id: 'fli', name: 'Flights', version: '1.0.0', shape: 'mcp-plugin' } },
  },
  lock: {
    plugins_lock_schema_version: 1,
    ...STAMP,
    plugins: {
      fli: {
        plugin_id: 'fli',
        version: '1.0.0',
        namespace_owner: 'io.example.fli',
        package: { source: '/src/fli', ref: '1.0.0', checksum: `sha256:${SHA}` },
        binding: { executable_path: 'bin/server', executable_sha256: SHA, argv_normalized: ['/p/fli/bin/server'], install_root: '/p/fli' },
      },
    },
    namespace_owners: { fli: { namespace_owner: 'io.example.fli', first_recorded_at: '2026-05-19T00:00:00.000Z' } },
  },
  state: {
    plugin_state_schema_version: 1,
    ...STAMP,
    plugins: {
      fli: pluginState(),
    },
  },
};

const VERSION_FIELD: Readonly<Record<CatalogFileKind, string>> = {
  catalog: 'plugin_catalog_schema_version',
  lock: 'plugins_lock_schema_version',
  state: 'plugin_state_schema_version',
};
const UNSUPPORTED = {
  catalog: 'PLUGIN_CATALOG_SCHEMA_UNSUPPORTED',
  lock: 'PLUGIN_LOCK_SCHEMA_UNSUPPORTED',
  state: 'PLUGIN_STATE_SCHEMA_UNSUPPORTED',
} as const;
const KINDS: readonly CatalogFileKind[] = ['catalog', 'lock', 'state'];
const KEYS = keysOf(...Object.values(VALID));

const catalogText = fc
  .tuple(
    fc.constantFrom(...KINDS),
    fc.array(mutation(KEYS), { maxLength: 3 }),
    fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(textMutation(['{', '}', '"', ',', '1', 'null']), { maxLength: 3 }) }),
  )
  .map(([kind, muts, textMuts]) => ({ kind, text: applyTextMutations(JSON.stringify(applyMutations(VALID[kind], muts)) ?? '', textMuts) }));

const RELATIVE = /^\+(\d{1,4})([dw])$/;
const canaryArgs = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.constantFrom('+0d', '+7d', '+2w', '+9999w', '+10000d', '+7D', '7d', ' +7d', '+7d\n', '+-1d'), fc.stringMatching(/^\+\d{1,5}[dwy]$/), fc.string({ maxLength: 6 })),
    fc.oneof(fc.integer(), fc.boolean(), fc.constant(null)),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'toString'), fc.string({ maxLength: 6 })), tie('value')), { maxLength: 4 }).map((entries) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of entries) withOwnKey(out, k, v);
      return out;
    }),
  ),
})).value;

/** Walks two trees in step, checking that only relative-date strings changed. */
function checkResolved(input: unknown, output: unknown, now: number): void {
  if (typeof input === 'string') {
    const m = RELATIVE.exec(input);
    if (m === null) expect(output).toBe(input);
    else {
      const days = Number(m[1]) * (m[2] === 'w' ? 7 : 1);
      expect(output).toBe(new Date(now + days * 86_400_000).toISOString().slice(0, 10));
      expect(output).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    return;
  }
  if (Array.isArray(input)) {
    expect(Array.isArray(output)).toBe(true);
    const out = output as unknown[];
    expect(out.length).toBe(input.length);
    input.forEach((v, i) => checkResolved(v, out[i], now));
    return;
  }
  if (typeof input === 'object' && input !== null) {
    const out = output as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(Object.keys(input));
    for (const key of Object.keys(input)) checkResolved((input as Record<string, unknown>)[key], Object.getOwnPropertyDescriptor(out, key)?.value, now);
    return;
  }
  expect(output).toBe(input);
}

/** Registers the catalog and canary targets. */
export function catalogTargets(): void {
  describe('host state', () => {
    fuzzTarget(
      'catalog files: parseFile on mutated catalog, lock and state files',
      [catalogText, fc.constantFrom(...KINDS)],
      ({ kind: source, text }, kind) => {
        const result = parseFile(kind, text, `/profile/${kind}`);
        expectResult(result, ['CATALOG_CORRUPT', UNSUPPORTED[kind]]);
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          expect(result.isErr()).toBe(true);
          return;
        }
        const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
        const version = isObject ? (value as Record<string, unknown>)[VERSION_FIELD[kind]] : undefined;
        if (result.isOk()) {
          expect(version).toBe(1);
          return;
        }
        expect(result.error.code === UNSUPPORTED[kind], 'the unsupported-version code names exactly a wrong version').toBe(isObject && version !== 1);
        if (source === kind && text === JSON.stringify(VALID[kind])) expect.unreachable('the valid file was refused');
      },
      { weight: 1 },
    );

    fuzzTarget(
      'canary: resolveRelativeDates replaces only relative dates',
      [canaryArgs, fc.integer({ min: 0, max: Date.UTC(2200, 0, 1) })],
      (args, now) => {
        checkResolved(args, resolveRelativeDates(args, now), now);
      },
      { weight: 2 },
    );
  });
}
