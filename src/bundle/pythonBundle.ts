/**
 * What a `server.type: python` MCP Bundle needs beyond the node mapping:
 * its vendored dependencies (`server/lib`, as MCPB lays a Python bundle
 * out) reach `sys.path` through `mcp_config.env.PYTHONPATH`. PYTHONPATH is
 * on the env denylist (from anywhere else it could load code from outside
 * the pinned tree), so the bundle's value is taken out of the env and, when
 * every entry is a directory of the bundle (`${__dirname}/…`), recorded as
 * the interpreter pin's search path instead (see src/binding/pythonPath.ts).
 */
import { isSafeRelativePath } from '../manifest/checks.js';
import { pointerOf, violation, type Violation } from '../manifest/violations.js';

const BUNDLE_DIR = '${__dirname}/';
const PYTHONPATH = 'PYTHONPATH';

/** A python bundle's env without PYTHONPATH, and the bundle directories it named. */
export interface PythonBundleLaunch {
  /** The env to set, without PYTHONPATH. */
  readonly env: Readonly<Record<string, string>>;
  /** The directories PYTHONPATH named, relative to the bundle root, in order; absent when it was not set. */
  readonly pythonPath?: readonly string[];
  /** Why PYTHONPATH was refused: an entry outside the bundle. */
  readonly violations: readonly Violation[];
}

/** Splits a python bundle's PYTHONPATH (`${__dirname}/server/lib`, several joined by `:`) out of its env. */
export function pythonBundleLaunch(env: Readonly<Record<string, string>>): PythonBundleLaunch {
  if (!Object.hasOwn(env, PYTHONPATH)) return { env, violations: [] };
  const { [PYTHONPATH]: value = '', ...rest } = env;
  const entries = value.split(':').filter((entry) => entry !== '');
  const dirs = entries.map((entry) => (entry.startsWith(BUNDLE_DIR) ? entry.slice(BUNDLE_DIR.length).replace(/\/+$/, '') : undefined));
  if (dirs.some((dir) => dir === undefined || !isSafeRelativePath(dir))) {
    const message = `PYTHONPATH ${JSON.stringify(value)} may only name directories inside the bundle, each written \${__dirname}/<path>`;
    return { env: rest, violations: [violation('env', 'PLUGIN_ENV_PROHIBITED', pointerOf('server', 'mcp_config', 'env', PYTHONPATH), message)] };
  }
  return { env: rest, pythonPath: dirs as string[], violations: [] };
}
