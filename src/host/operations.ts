/**
 * Operation ids as a host sees them. Every operation is called as
 * `plug.<plugin_id>.<tool>`: JSON v1 manifests get that id from the
 * installer; the TOML contract form records `<plugin_id>.<operation>`, which
 * the host prefixes with `plug.` the same way, so both forms share one
 * namespace of callable ids.
 */
import type { CatalogVariant } from '../catalog/catalogTypes.js';
import type { RiskClass } from '../manifest/model.js';

const OP_PLUGIN = /^plug\.([a-z][a-z0-9-]{0,63})\./;

/** The id a host calls a variant by. */
export function hostOpId(variant: CatalogVariant): string {
  return variant.op_id.startsWith(`plug.${variant.plugin_id}.`) ? variant.op_id : `plug.${variant.op_id}`;
}

/** The plugin id named by an operation id, if it has the `plug.<plugin_id>.` form. */
export function pluginIdOf(opId: string): string | undefined {
  return OP_PLUGIN.exec(opId)?.[1];
}

/** The variant of a plugin an operation id names. */
export function findVariant(variants: readonly CatalogVariant[], opId: string): CatalogVariant | undefined {
  return variants.find((v) => hostOpId(v) === opId);
}

const RISK_RANK: Readonly<Record<RiskClass, number>> = { read: 0, write: 1, destructive: 2 };

/** Whether a tool of class `risk` may run under a call that accepts at most `max`. */
export function riskAllowed(risk: RiskClass, max: RiskClass): boolean {
  return RISK_RANK[risk] <= RISK_RANK[max];
}
