import { hostError, type HostError } from '../../errors/HostError.js';

/** A plugin and the plugins it must load after. */
export interface DependencyNode {
  /** The plugin's id. */
  readonly id: string;
  /** Ids of the plugins it depends on. */
  readonly dependencies: readonly string[];
}

/** A load order and the plugins that cannot load. */
export interface DependencyOrder {
  /** Ids in an order where every plugin follows its dependencies; ties keep input order. */
  readonly order: readonly string[];
  /**
   * Plugins that cannot load: PLUGIN_DEPENDENCY_CYCLE for every member of a
   * cycle (the message names it, `a -> b -> a`), PLUGIN_DEPENDENCY_MISSING for
   * a plugin whose dependency is absent or cannot load (the message names it).
   */
  readonly failed: ReadonlyMap<string, HostError>;
}

/**
 * Orders plugins so that dependencies load first (depth-first topological
 * sort). `available` names plugins already loaded elsewhere, which satisfy a
 * dependency without being ordered.
 */
export function orderByDependencies(nodes: readonly DependencyNode[], available: ReadonlySet<string> = new Set()): DependencyOrder {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const order: string[] = [];
  const failed = new Map<string, HostError>();
  const done = new Set<string>();
  const onPath: string[] = [];

  const fail = (id: string, error: HostError): void => {
    if (!failed.has(id)) failed.set(id, error);
    done.add(id);
  };

  const visit = (id: string): boolean => {
    if (done.has(id)) return !failed.has(id);
    const node = byId.get(id)!;
    onPath.push(id);
    let ok = true;
    for (const dep of node.dependencies) {
      if (!byId.has(dep)) {
        if (available.has(dep)) continue;
        fail(id, hostError('PLUGIN_DEPENDENCY_MISSING', `${id} depends on ${dep}, which is not available`, { details: { plugin: id, dependency: dep } }));
        ok = false;
        break;
      }
      const at = onPath.indexOf(dep);
      if (at >= 0) {
        const cycle = [...onPath.slice(at), dep];
        const diagnostic = `dependency cycle: ${cycle.join(' -> ')}`;
        for (const member of cycle.slice(0, -1)) {
          fail(member, hostError('PLUGIN_DEPENDENCY_CYCLE', `${member} cannot load: ${diagnostic}`, { details: { plugin: member, cycle } }));
        }
        ok = false;
        break;
      }
      if (!visit(dep)) {
        const why = failed.get(dep);
        fail(id, hostError('PLUGIN_DEPENDENCY_MISSING', `${id} depends on ${dep}, which cannot load${why === undefined ? '' : `: ${why.message}`}`, { details: { plugin: id, dependency: dep } }));
        ok = false;
        break;
      }
    }
    onPath.pop();
    if (failed.has(id)) return false;
    if (ok) {
      done.add(id);
      order.push(id);
    }
    return ok;
  };

  for (const node of nodes) visit(node.id);
  return { order, failed };
}
