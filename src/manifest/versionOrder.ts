/**
 * Semantic version precedence (semver 2.0.0, section 11), for telling an
 * upgrade from a downgrade. Manifests do not all require semver, so the core
 * may also be any number of dot-separated numbers (`2024.10`, `1.0`, `5`),
 * compared number by number with missing ones read as 0, which is how
 * CalVer and two-part versions order; without it, such a version had no
 * order and any older one installed as an upgrade. Anything else has no order.
 */

const VERSION = /^v?(\d+(?:\.\d+)*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
const NUMERIC = /^\d+$/;

interface Parsed {
  readonly core: readonly bigint[];
  readonly prerelease: readonly string[];
}

function parse(version: string): Parsed | undefined {
  const m = VERSION.exec(version);
  if (m === null) return undefined;
  return { core: m[1]!.split('.').map((part) => BigInt(part)), prerelease: m[2] === undefined ? [] : m[2].split('.') };
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
 * either is neither a semantic version nor dotted numbers (then only string
 * equality means "the same version"). Build metadata does not count, nor do
 * trailing zero parts (`1.0` is `1.0.0`).
 */
export function compareVersions(a: string, b: string): -1 | 0 | 1 | undefined {
  const x = parse(a);
  const y = parse(b);
  if (x === undefined || y === undefined) return a === b ? 0 : undefined;
  for (let i = 0; i < Math.max(x.core.length, y.core.length); i++) {
    const c = sign(x.core[i] ?? 0n, y.core[i] ?? 0n);
    if (c !== 0) return c as -1 | 1;
  }
  return comparePrerelease(x.prerelease, y.prerelease) as -1 | 0 | 1;
}
