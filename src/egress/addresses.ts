import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import refusedRanges from '../../etc/egress/refused-ranges.json' with { type: 'json' };

/** Why an address is refused unless listed: the `kind` of its range in `etc/egress/refused-ranges.json`. */
export type RefusedAddressKind = 'metadata' | 'unspecified' | 'loopback' | 'private' | 'link_local' | 'multicast' | 'reserved' | 'self';

/** One block list per kind, in file order, so the first (most specific) range listed names the kind. */
const RANGES: readonly { readonly kind: RefusedAddressKind; readonly list: BlockList }[] = refusedRanges.ranges.map(({ cidr, kind }) => {
  const [network = '', prefix = ''] = cidr.split('/');
  const list = new BlockList();
  list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  return { kind: kind as RefusedAddressKind, list };
});

/** The eight 16-bit groups of an IPv6 address (dotted IPv4 tail included), or undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  return [...headGroups, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...tailGroups].map((g) => parseInt(g, 16));
}

const v4 = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/**
 * The IPv4 address an IPv6 address carries and delivers to when dialled
 * through a translator: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated
 * (`::ffff:0:a.b.c.d`, SIIT), IPv4-compatible, NAT64 well-known prefix
 * (`64:ff9b::/96`) and 6to4 (`2002::/16`).
 */
function carriedIPv4(groups: readonly number[]): string | undefined {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  const zeroTo = (n: number): boolean => groups.slice(0, n).every((g) => g === 0);
  if (zeroTo(5) && g5 === 0xffff) return v4(g6, g7);
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return v4(g6, g7);
  if (zeroTo(6) && (g6 !== 0 || g7 > 1)) return v4(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return v4(g6, g7);
  if (g0 === 0x2002) return v4(g1 ?? 0, g2 ?? 0);
  return undefined;
}

/**
 * One spelling per address, for comparing a dialled address with a listed
 * one: IPv4 as dotted quad, IPv6 as eight lower-case hex groups (an
 * IPv4-mapped address as the IPv4 address). `undefined` for a non-address.
 */
export function canonicalAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return address.split('.').map(Number).join('.');
  const groups = ipv6Groups(address);
  if (groups === undefined) return undefined;
  const [g6 = 0, g7 = 0] = groups.slice(6);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return v4(g6, g7);
  return groups.map((g) => g.toString(16)).join(':');
}

/**
 * The addresses the host itself holds on its non-loopback interfaces (eth0's,
 * a bridge's, a VPN's), canonical, read when asked, so an address added after
 * the host started counts. Services that listen on all interfaces, or only on
 * such an address, are the host's own, whatever range the address lies in (a
 * public address on a cloud VM, TEST-NET here). Read once per look-up's
 * answer, not per address: an answer may hold thousands.
 */
export function ownInterfaceAddresses(): ReadonlySet<string> {
  const own = new Set<string>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const canonical = entry.internal ? undefined : canonicalAddress(entry.address.replace(/%.*$/, ''));
      if (canonical !== undefined) own.add(canonical);
    }
  }
  return own;
}

/** Whether `address` is one of `own` ({@link ownInterfaceAddresses}; read now when not given). */
export function isOwnInterfaceAddress(address: string, own: ReadonlySet<string> = ownInterfaceAddresses()): boolean {
  const wanted = canonicalAddress(address.replace(/%.*$/, ''));
  return wanted !== undefined && own.has(wanted);
}

/**
 * The kind of refused range an address lies in (metadata, loopback,
 * private, link-local, …), checking an IPv6 address that carries an IPv4
 * address as that IPv4 address too; `undefined` for a public address.
 */
export function refusedKind(address: string): RefusedAddressKind | undefined {
  // A zone index names an interface of the host, never a remote destination.
  const bare = address.replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0 || bare !== address) return 'reserved';
  const groups = family === 6 ? ipv6Groups(bare) : undefined;
  const carried = groups === undefined ? undefined : carriedIPv4(groups);
  for (const { kind, list } of RANGES) {
    if (list.check(bare, family === 6 ? 'ipv6' : 'ipv4')) return kind;
    if (carried !== undefined && list.check(carried, 'ipv4')) return kind;
  }
  return undefined;
}
