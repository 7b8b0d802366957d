/** Pure logic of the egress allowlist: destination syntax and matching, refused address ranges. */
import { describe, expect, it } from 'vitest';
import { canonicalAddress, refusedKind } from '../../src/egress/addresses.js';
import { checkDestination, egressPolicy, listsAddress, parseDestination, uncoveredDestinations } from '../../src/egress/destinations.js';

const policy = (entries: string[]) => egressPolicy(entries, '/declared_capabilities/egress')._unsafeUnwrap();

describe('destination syntax', () => {
  it.each([
    ['api.github.com:443', { kind: 'name', host: 'api.github.com', ports: [443] }],
    ['API.Example.COM.', { kind: 'name', host: 'api.example.com', ports: [443, 80] }],
    ['*.example.com', { kind: 'suffix', host: 'example.com', ports: [443, 80] }],
    ['10.0.0.5:8080', { kind: 'address', host: '10.0.0.5', ports: [8080] }],
    ['[2001:DB8::1]:443', { kind: 'address', host: '2001:db8:0:0:0:0:0:1', ports: [443] }],
  ])('reads %s', (entry, rule) => {
    expect(parseDestination(entry)._unsafeUnwrap()).toEqual(rule);
  });

  it.each(['api.test:0', 'api.test:65536', 'api.test:https', '2001:db8::1', '*.com', '*', 'a.*.example.com', 'exa mple.com', '-bad.example.com', '1.2.3', 'host.2130706433', '', 'http://api.test'])(
    'refuses %j',
    (entry) => {
      expect(parseDestination(entry).isErr()).toBe(true);
    },
  );

  it('names the bad entry and where it came from', () => {
    expect(egressPolicy(['api.test', 'bad host'], '/grant/egress')._unsafeUnwrapErr()).toMatchObject({
      code: 'PLUGIN_EGRESS_DESTINATION_INVALID',
      details: { pointer: '/grant/egress/1', destination: 'bad host' },
    });
  });
});

describe('destination matching', () => {
  const list = policy(['api.github.com:443', '*.example.com', '10.0.0.5:8080']);

  it('allows a listed name on a listed port only', () => {
    expect(checkDestination(list, 'API.GITHUB.COM', 443)).toEqual({ allowed: true, host: 'api.github.com', isAddress: false });
    expect(checkDestination(list, 'api.github.com', 80)).toEqual({ allowed: false, reason: 'not_listed' });
    expect(checkDestination(list, 'github.com', 443)).toEqual({ allowed: false, reason: 'not_listed' });
  });

  it('lets a wildcard cover names below the suffix, not the suffix itself nor look-alikes', () => {
    expect(checkDestination(list, 'a.b.example.com', 443).allowed).toBe(true);
    expect(checkDestination(list, 'example.com', 443).allowed).toBe(false);
    expect(checkDestination(list, 'evilexample.com', 443).allowed).toBe(false);
  });

  it('allows an IP literal only when the list names that address, whatever name would resolve to it', () => {
    expect(checkDestination(list, '10.0.0.5', 8080)).toEqual({ allowed: true, host: '10.0.0.5', isAddress: true });
    expect(checkDestination(list, '::ffff:10.0.0.5', 8080).allowed).toBe(true);
    expect(checkDestination(list, '93.184.216.34', 443)).toEqual({ allowed: false, reason: 'ip_literal_not_listed' });
    expect(checkDestination(list, '2130706433', 443)).toEqual({ allowed: false, reason: 'invalid_destination' });
    expect(listsAddress(list, '10.0.0.5', 8080)).toBe(true);
    expect(listsAddress(list, '10.0.0.5', 443)).toBe(false);
  });

  it('finds the granted destinations a declared list does not cover', () => {
    const declared = policy(['*.example.com', 'api.github.com:443']);
    expect(uncoveredDestinations(policy(['a.example.com:443', '*.b.example.com', 'api.github.com:443']), declared)).toEqual([]);
    expect(uncoveredDestinations(policy(['example.com', 'api.github.com', '10.0.0.1']), declared)).toEqual(['example.com', 'api.github.com', '10.0.0.1']);
  });
});

describe('refused address ranges', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12::1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['169.254.1.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'reserved'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    // IPv6 spellings that deliver to an IPv4 address are checked as that address.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:c0a8:0101::1', 'private'],
    // IPv4-translated (SIIT, RFC 6145) and the local-use NAT64 prefix (RFC 8215), which translators inside a network use.
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:a9fe:a9fe', 'metadata'],
    ['64:ff9b:1::a00:1', 'private'],
    ['64:ff9b:1:ffff::1', 'private'],
  ])('%s is %s', (address, kind) => {
    expect(refusedKind(address)).toBe(kind);
  });

  it.each(['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '203.0.113.10', '::ffff:93.184.216.34'])('%s is public', (address) => {
    expect(refusedKind(address)).toBeUndefined();
  });

  it('spells an address one way', () => {
    expect(canonicalAddress('::FFFF:10.0.0.5')).toBe('10.0.0.5');
    expect(canonicalAddress('2001:db8::1')).toBe(canonicalAddress('2001:0db8:0:0::0001'));
    expect(canonicalAddress('not an address')).toBeUndefined();
  });
});
