/**
 * The npm-style version ranges MCP Bundles write in
 * `compatibility.runtimes` (`>=18.0.0`, `^3.10`, `>=3.8 <4`, `18.x || 20.x`),
 * checked against an interpreter's `--version`. Pre-release tags are ignored:
 * a runtime is compared by major, minor and patch.
 */

type Triple = readonly [number, number, number];

/** A partial version: how many of major, minor, patch were written. */
interface Partial {
  readonly parts: readonly number[];
}

const PARTIAL = /^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:[-+][0-9A-Za-z.+-]*)?$/;

function readPartial(text: string): Partial | undefined {
  const m = PARTIAL.exec(text);
  if (m === null) return undefined;
  const parts: number[] = [];
  for (const part of [m[1], m[2], m[3]]) {
    if (part === undefined || /^[xX*]$/.test(part)) break;
    parts.push(Number(part));
  }
  return { parts };
}

const fill = (p: Partial): Triple => [p.parts[0] ?? 0, p.parts[1] ?? 0, p.parts[2] ?? 0];

function compare(a: Triple, b: Triple): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] ?? 0) < (b[i] ?? 0) ? -1 : 1;
  return 0;
}

/** The exclusive upper bound of a partial version written alone (`1.2` → `<1.3.0`), or undefined for `*`. */
function nextOf(p: Partial): Triple | undefined {
  const [major, minor] = [p.parts[0], p.parts[1]];
  if (major === undefined) return undefined;
  if (p.parts.length === 1) return [major + 1, 0, 0];
  if (p.parts.length === 2) return [major, (minor ?? 0) + 1, 0];
  return undefined;
}

type Check = (v: Triple) => boolean;

function comparator(token: string): Check[] | undefined {
  const m = /^(>=|<=|>|<|=|\^|~)?(.*)$/.exec(token);
  const op = m?.[1] ?? '';
  const p = readPartial(m?.[2] ?? '');
  if (p === undefined) return undefined;
  const low = fill(p);
  const [major = 0, minor = 0] = p.parts;
  switch (op) {
    case '>=':
      return [(v) => compare(v, low) >= 0];
    case '<=': {
      const next = nextOf(p);
      return [(v) => (next === undefined ? p.parts.length === 0 || compare(v, low) <= 0 : compare(v, next) < 0)];
    }
    case '>': {
      const next = nextOf(p);
      return [(v) => (next === undefined ? p.parts.length === 3 && compare(v, low) > 0 : compare(v, next) >= 0)];
    }
    case '<':
      return [(v) => p.parts.length > 0 && compare(v, low) < 0];
    case '^': {
      const upper: Triple = major > 0 || p.parts.length < 2 ? [major + 1, 0, 0] : minor > 0 || p.parts.length < 3 ? [0, minor + 1, 0] : [0, 0, (p.parts[2] ?? 0) + 1];
      return [(v) => compare(v, low) >= 0 && compare(v, upper) < 0];
    }
    case '~': {
      const upper: Triple = p.parts.length < 2 ? [major + 1, 0, 0] : [major, minor + 1, 0];
      return [(v) => compare(v, low) >= 0 && compare(v, upper) < 0];
    }
    default: {
      const next = nextOf(p);
      if (p.parts.length === 0) return [() => true];
      return next === undefined ? [(v) => compare(v, low) === 0] : [(v) => compare(v, low) >= 0 && compare(v, next) < 0];
    }
  }
}

function alternative(text: string): Check[] | undefined {
  const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text);
  const tokens = hyphen === null ? text.split(/\s+/).filter((t) => t !== '') : [`>=${hyphen[1] ?? ''}`, `<=${hyphen[2] ?? ''}`];
  const checks: Check[] = [];
  for (const token of tokens.length === 0 ? ['*'] : tokens) {
    const c = comparator(token.replace(/^(>=|<=|>|<|=)\s*/, '$1'));
    if (c === undefined) return undefined;
    checks.push(...c);
  }
  return checks;
}

/**
 * Whether `version` (e.g. `v20.11.1`, `3.11.2`) lies in `range`; undefined
 * when either cannot be read.
 */
export function satisfiesRange(version: string, range: string): boolean | undefined {
  const v = readPartial(version.trim());
  if (v === undefined || v.parts.length === 0) return undefined;
  const triple = fill(v);
  const alternatives = range.split('||').map((a) => alternative(a.trim().replace(/(>=|<=|>|<|=)\s+/g, '$1')));
  if (alternatives.some((a) => a === undefined)) return undefined;
  return alternatives.some((checks) => (checks ?? []).every((check) => check(triple)));
}
