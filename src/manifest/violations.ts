import { hostError, type HostError } from '../errors/HostError.js';
import type { HostErrorCode } from '../errors/registry.js';

/**
 * The checks in the order the GUM contract fixes (the Installer runs the same
 * order). Violations sort by stage first, then by JSON pointer.
 */
export const CHECK_STAGES = [
  'parse',
  'schema_version',
  'shape',
  'structure',
  'namespace',
  'env',
  'credentials',
  'schema_refs',
  'strip_nulls',
  'output_profiles',
] as const;

/** One step of the check order. */
export type CheckStage = (typeof CHECK_STAGES)[number];

/** One thing wrong with a manifest. */
export interface Violation {
  /** RFC 6901 JSON pointer into the parsed document; `""` is the whole document. */
  readonly pointer: string;
  /** The stable code this violation maps to. */
  readonly code: HostErrorCode;
  /** What is wrong, for people. */
  readonly message: string;
  /** The check that found it. */
  readonly stage: CheckStage;
}

const STAGE_RANK: Readonly<Record<CheckStage, number>> = Object.fromEntries(
  CHECK_STAGES.map((stage, i) => [stage, i]),
) as Record<CheckStage, number>;

/** Builds a violation. */
export function violation(stage: CheckStage, code: HostErrorCode, pointer: string, message: string): Violation {
  return { stage, code, pointer, message };
}

/** Escapes one reference token (RFC 6901 §3). */
export function escapePointerToken(token: string | number): string {
  return String(token).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Joins reference tokens into a JSON pointer. */
export function pointerOf(...tokens: ReadonlyArray<string | number>): string {
  return tokens.map((t) => `/${escapePointerToken(t)}`).join('');
}

const INDEX = /^(?:0|[1-9][0-9]*)$/;

/** Orders pointers token by token, array indices numerically, so `/tools/2` precedes `/tools/10`. */
export function comparePointers(a: string, b: string): number {
  if (a === b) return 0;
  const as = a.split('/');
  const bs = b.split('/');
  const n = Math.min(as.length, bs.length);
  for (let i = 0; i < n; i++) {
    const x = as[i]!;
    const y = bs[i]!;
    if (x === y) continue;
    if (INDEX.test(x) && INDEX.test(y)) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return as.length - bs.length;
}

/** Stable order: check stage, then pointer, then message; exact duplicates dropped. */
export function sortViolations(list: readonly Violation[]): Violation[] {
  const seen = new Set<string>();
  const unique = list.filter((v) => {
    const key = `${v.stage}\u0000${v.pointer}\u0000${v.code}\u0000${v.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique.sort(
    (a, b) =>
      STAGE_RANK[a.stage] - STAGE_RANK[b.stage] ||
      comparePointers(a.pointer, b.pointer) ||
      (a.message < b.message ? -1 : a.message > b.message ? 1 : 0),
  );
}

/** A violation list with at least one entry. */
export type NonEmptyViolations = readonly [Violation, ...Violation[]];

/** Whether a list holds at least one violation. */
export function hasViolations(list: readonly Violation[]): list is NonEmptyViolations {
  return list.length > 0;
}

/**
 * One `HostError` for a non-empty, sorted violation list: its code is the
 * first violation's, `details.violations` lists all of them.
 */
export function violationsError(source: string, violations: NonEmptyViolations): HostError {
  const first = violations[0];
  const more = violations.length > 1 ? ` (and ${violations.length - 1} more)` : '';
  return hostError(first.code, `${source}: ${first.pointer || '(document)'}: ${first.message}${more}`, {
    details: {
      source,
      violations: violations.map(({ pointer, code, message, stage }) => ({ pointer, code, message, stage })),
    },
  });
}
