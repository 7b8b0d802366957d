/**
 * How deep arrays and objects nest in a parsed JSON value, found without
 * recursion. JSON.parse reads any depth, but every recursive walk of the
 * value (JSON.stringify on the way to a plugin or a client, an
 * application's logger) overflows the stack a few thousand levels down, so
 * values that cross the host are held to a bound first.
 */

/** Whether arrays and objects nest deeper than `limit` in `value`. */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  // Two parallel stacks of containers only: a walk of every warm call's value allocates no record per value.
  const containers: object[] = [value];
  const depths: number[] = [0];
  for (let container = containers.pop(); container !== undefined; container = containers.pop()) {
    const depth = depths.pop() ?? 0;
    if (depth >= limit) return true;
    const children: readonly unknown[] = Array.isArray(container) ? container : Object.values(container);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        containers.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}
