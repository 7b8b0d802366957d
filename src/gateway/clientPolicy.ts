/**
 * What one gateway client may see and call: a risk ceiling and allow/deny
 * lists of plugin ids and operation ids.
 */
import type { RiskClass } from '../manifest/model.js';
import { pluginIdOf } from '../host/operations.js';

/**
 * The policy of one gateway client. A filter entry is a plugin id (every
 * operation of that plugin) or an operation id (`plug.<plugin_id>.<tool>`).
 */
export interface GatewayClientPolicy {
  /** The highest risk class this client's calls accept. Default the gateway's `maxRisk`, else `read`. */
  readonly maxRisk?: RiskClass;
  /** When given, only these plugins and operations are listed and callable. */
  readonly allow?: readonly string[];
  /** Plugins and operations never listed or callable; wins over `allow`. */
  readonly deny?: readonly string[];
}

function matches(entries: readonly string[], opId: string, pluginId: string | undefined): boolean {
  return entries.some((entry) => entry === opId || entry === pluginId);
}

/** Whether `policy` lets its client see and call `opId`. */
export function offeredTo(policy: GatewayClientPolicy, opId: string): boolean {
  // Asked on every call a client makes: without lists there is nothing to match the op id's plugin against.
  if (policy.deny === undefined && policy.allow === undefined) return true;
  const pluginId = pluginIdOf(opId);
  if (policy.deny !== undefined && matches(policy.deny, opId, pluginId)) return false;
  return policy.allow === undefined || matches(policy.allow, opId, pluginId);
}
