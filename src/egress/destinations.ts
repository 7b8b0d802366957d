import { isIP } from 'node:net';
import { err, ok, type Result } from 'neverthrow';
import proxySettings from '../../etc/egress/proxy.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import { canonicalAddress } from './addresses.js';

/** The ports a destination written without `:port` allows (`etc/egress/proxy.json`). */
export const DEFAULT_EGRESS_PORTS: readonly number[] = Object.freeze([...proxySettings.defaultPorts]);

/**
 * One parsed destination: an exact host name, every name below a suffix
 * (`*.example.com`, not `example.com` itself), or one IP address given
 * literally; each with the ports it allows.
 */
export interface EgressRule {
  readonly kind: 'name' | 'suffix' | 'address';
  /** Lower-case name without a trailing dot, the suffix without `*.`, or the canonical address. */
  readonly host: string;
  readonly ports: readonly number[];
}

/** A plugin's parsed destination list; empty allows nothing. */
export interface EgressPolicy {
  /** The destinations as written in the manifest or grant. */
  readonly entries: readonly string[];
  readonly rules: readonly EgressRule[];
}

/** Why a destination a plugin asked for is refused before any name is resolved. */
export type DestinationRefusal = 'not_listed' | 'ip_literal_not_listed' | 'invalid_destination';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A DNS host name in lower case without its trailing dot, or undefined. A numeric last label is refused: resolvers read `1.2.3` or `2130706433` as an IPv4 address. */
function hostName(text: string): string | undefined {
  const name = text.toLowerCase().replace(/\.$/, '');
  if (name.length === 0 || name.length > 253) return undefined;
  const labels = name.split('.');
  if (!labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return undefined;
  return name;
}

/** `host` and `port` of `host[:port]`, `[v6][:port]`; the port text is undefined when absent. */
function splitHostPort(text: string): { host: string; port: string | undefined } | undefined {
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    const rest = text.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return undefined;
    return { host: text.slice(1, close), port: rest === '' ? undefined : rest.slice(1) };
  }
  const colon = text.lastIndexOf(':');
  if (colon >= 0 && text.indexOf(':') !== colon) return undefined;
  return colon < 0 ? { host: text, port: undefined } : { host: text.slice(0, colon), port: text.slice(colon + 1) };
}

function portNumber(text: string): number | undefined {
  if (!/^[0-9]{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * Parses one destination (`api.github.com:443`, `*.example.com`,
 * `10.0.0.5:8080`, `[2001:db8::1]:443`); the problem in words when it is
 * not one. A bare IPv6 address must be bracketed; a wildcard covers one
 * whole leading label and needs at least two labels after it.
 */
export function parseDestination(entry: string): Result<EgressRule, string> {
  const split = splitHostPort(entry.trim());
  if (split === undefined) return err('is not host[:port] (write an IPv6 address in brackets)');
  const port = split.port === undefined ? undefined : portNumber(split.port);
  if (split.port !== undefined && port === undefined) return err(`has port ${JSON.stringify(split.port)}, not a number from 1 to 65535`);
  const ports = port === undefined ? DEFAULT_EGRESS_PORTS : [port];
  const literal = isIP(split.host);
  if (literal !== 0) {
    if (literal === 6 && !entry.trim().startsWith('[')) return err('names an IPv6 address without brackets');
    return ok({ kind: 'address', host: canonicalAddress(split.host)!, ports });
  }
  if (split.host.startsWith('*.')) {
    const suffix = hostName(split.host.slice(2));
    if (suffix === undefined || !suffix.includes('.')) return err('has a wildcard that does not stand for the first label of a name with at least two more labels');
    return ok({ kind: 'suffix', host: suffix, ports });
  }
  const name = hostName(split.host);
  if (name === undefined) return err('is neither a DNS host name nor an IP address');
  return ok({ kind: 'name', host: name, ports });
}

/**
 * Parses a destination list. A malformed entry fails with
 * PLUGIN_EGRESS_DESTINATION_INVALID naming it and `pointer` (where the list
 * came from: a manifest field or a grant option).
 */
export function egressPolicy(entries: readonly string[], pointer: string): Result<EgressPolicy, HostError> {
  const rules: EgressRule[] = [];
  for (const [index, entry] of entries.entries()) {
    const rule = parseDestination(entry);
    if (rule.isErr()) {
      return err(
        hostError('PLUGIN_EGRESS_DESTINATION_INVALID', `Egress destination ${JSON.stringify(entry)} ${rule.error}.`, {
          details: { pointer: `${pointer}/${index}`, destination: entry, problem: rule.error },
        }),
      );
    }
    rules.push(rule.value);
  }
  return ok({ entries: Object.freeze([...entries]), rules: Object.freeze(rules) });
}

/** Whether `rule` allows `host` (a canonical address or a checked lower-case name) on `port`. */
function ruleAllows(rule: EgressRule, host: string, isAddress: boolean, port: number): boolean {
  if (!rule.ports.includes(port)) return false;
  if (rule.kind === 'address') return isAddress && rule.host === host;
  if (isAddress) return false;
  return rule.kind === 'name' ? rule.host === host : host.endsWith(`.${rule.host}`);
}

/** What the destination check says about a request, before any resolution. */
export type DestinationCheck =
  | { readonly allowed: true; readonly host: string; readonly isAddress: boolean }
  | { readonly allowed: false; readonly reason: DestinationRefusal };

/**
 * Whether a plugin with `policy` may ask for `host` (a name or an IP
 * literal, IPv6 without brackets) on `port`. An IP literal is allowed only
 * when the list names that very address.
 */
export function checkDestination(policy: EgressPolicy, host: string, port: number): DestinationCheck {
  const address = isIP(host) === 0 ? undefined : canonicalAddress(host);
  if (address !== undefined) {
    return policy.rules.some((r) => ruleAllows(r, address, true, port)) ? { allowed: true, host: address, isAddress: true } : { allowed: false, reason: 'ip_literal_not_listed' };
  }
  const name = hostName(host);
  if (name === undefined) return { allowed: false, reason: 'invalid_destination' };
  return policy.rules.some((r) => ruleAllows(r, name, false, port)) ? { allowed: true, host: name, isAddress: false } : { allowed: false, reason: 'not_listed' };
}

/** Whether the list names `address` itself on `port`: such an address is dialled even inside a refused range. */
export function listsAddress(policy: EgressPolicy, address: string, port: number): boolean {
  const canonical = canonicalAddress(address);
  return canonical !== undefined && policy.rules.some((r) => ruleAllows(r, canonical, true, port));
}

/** Whether everything `inner` allows, `outer` allows too. */
function ruleWithin(inner: EgressRule, outer: EgressRule): boolean {
  if (!inner.ports.every((p) => outer.ports.includes(p))) return false;
  if (inner.kind === 'address' || outer.kind === 'address') return inner.kind === outer.kind && inner.host === outer.host;
  if (outer.kind === 'name') return inner.kind === 'name' && inner.host === outer.host;
  return inner.host.endsWith(`.${outer.host}`) || (inner.kind === 'suffix' && inner.host === outer.host);
}

/** The entries of `granted` that `declared` does not cover (a grant may only narrow a declared list). */
export function uncoveredDestinations(granted: EgressPolicy, declared: EgressPolicy): string[] {
  return granted.entries.filter((_, i) => !declared.rules.some((outer) => ruleWithin(granted.rules[i]!, outer)));
}
