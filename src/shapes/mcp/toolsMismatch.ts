import { hostError, type HostError } from '../../errors/HostError.js';

/**
 * Compares the tools a plugin lists with the tools its manifest declares
 * (unprefixed names). `undefined` when they are the same set; otherwise a
 * `PLUGIN_TOOLS_MISMATCH` whose details name the undeclared and the missing
 * tools, each sorted.
 */
export function toolsMismatch(declared: readonly string[], listed: readonly string[]): HostError | undefined {
  const declaredSet = new Set(declared);
  const listedSet = new Set(listed);
  const undeclared = [...listedSet].filter((name) => !declaredSet.has(name)).sort();
  const missing = [...declaredSet].filter((name) => !listedSet.has(name)).sort();
  if (undeclared.length === 0 && missing.length === 0) return undefined;
  const parts = [
    ...(undeclared.length > 0 ? [`lists tools its manifest does not declare (${undeclared.join(', ')})`] : []),
    ...(missing.length > 0 ? [`does not list declared tools (${missing.join(', ')})`] : []),
  ];
  return hostError('PLUGIN_TOOLS_MISMATCH', `plugin ${parts.join(' and ')}`, { details: { undeclared, missing } });
}
