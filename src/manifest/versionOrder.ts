/**
 * Semantic version precedence (semver 2.0.0, section 11), for telling an
 * upgrade from a downgrade. Manifests do not all require semver, so a
 * version that is not one has no order.
 */

const SEMVER = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
const NUMERIC = /^\d+$/;

interface Parsed {
  readonly core: readonly [bigint, bigint, bigint];
  readonly prerelease: readonly string[];
}

function parse(version: string): Parsed | undefined {
  const m = SEMVER.exec(version);
  if (m === null) return undefined;
  return { core: [BigInt(m[1]!), BigInt(m[2]!), BigInt(m[3]!)], prerelease: m[4] === undefined ? [] : m[4].split('.') };
}

const sign = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

function comparePrerelease(a: readonly string[], b: readonly string[]): number {
  // A version without a prerelease ranks above any prerelease of the same core.
  if (a.length === 0 || b.length === 0) return a.length === b.length ? 0 : a.length === 0 ? 1 : -1;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    const xn = NUMERIC.test(x);
    const yn = NUMERIC.test(y);
    if (xn && yn) return sign(BigInt(x), BigInt(y));
    if (xn !== yn) return xn ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return Math.sign(a.length - b.length);
}

/**
 * -1, 0 or 1 as `a` ranks below, equal to or above `b`; `undefined` when
 * either is not a semantic version (then only string equality means "the
 * same version"). Build metadata does not count.
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 | undefined {
  const x = parse(a);
  const y = parse(b);
  if (x === undefined || y === undefined) return a === b ? 0 : undefined;
  for (let i = 0; i < 3; i++) {
    const c = sign(x.core[i]!, y.core[i]!);
    if (c !== 0) return c as -1 | 1;
  }
  return comparePrerelease(x.prerelease, y.prerelease) as -1 | 0 | 1;
}
