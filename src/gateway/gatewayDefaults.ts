/** The gateway's defaults, from `etc/gateway-defaults.json`. */
import defaults from '../../etc/gateway-defaults.json' with { type: 'json' };
import type { RiskClass } from '../manifest/model.js';

/** The defaults a gateway falls back on. */
export interface GatewayDefaults {
  /** The MCP server name announced to clients. */
  readonly serverName: string;
  /** The address HTTP binds to: loopback. */
  readonly bindHost: string;
  /** The HTTP port. */
  readonly port: number;
  /** The risk ceiling of a client without its own. */
  readonly maxRisk: RiskClass;
  /** How often the catalog is read again to notice installs and removals. */
  readonly catalogPollMs: number;
  /** Random bytes in a generated bearer token. */
  readonly tokenBytes: number;
  /** Host names an Origin may carry without being configured. */
  readonly loopbackHostnames: readonly string[];
  /** The `_meta` key of the host error an error result carries. */
  readonly errorMetaKey: string;
  /** The shortest bearer token accepted from a token source. */
  readonly minTokenLength: number;
}

/** The gateway's defaults, loaded once. */
export const GATEWAY_DEFAULTS: GatewayDefaults = Object.freeze({ ...defaults, maxRisk: defaults.maxRisk as RiskClass, loopbackHostnames: Object.freeze([...defaults.loopbackHostnames]) });
