/**
 * The Node versions an npm package says it runs on (`engines.node` in its
 * package.json), read only to explain a server that failed to start. npm
 * itself only warns about a mismatch, and many packages declare a range
 * wider or narrower than what they need, so the host never refuses an install
 * for it: but a server that needs a newer Node than the one it was started
 * with typically dies with words that do not say so (`@bytebase/dbhub` needs
 * `node:sqlite` of Node 22.5: "No such built-in module: node:sqlite").
 */
import type { InterpreterPin } from '../binding/interpreter.js';
import { nodeVersionOf, type InterpreterVersionProbe } from '../binding/interpreterVersion.js';
import { satisfiesRange } from '../bundle/versionRange.js';
import { reworded, type HostError } from '../errors/HostError.js';

/** The Node the server ran on, beside the range its package declares and that range leaves out. */
export interface EngineMismatch {
  /** The package's `engines.node`, as written. */
  readonly declared: string;
  /** The interpreter the server was started with (the real path of its pinned `#!` interpreter). */
  readonly interpreter: string;
  /** That interpreter's version (`20.20.2`). */
  readonly version: string;
}

/** The `engines.node` range a package.json declares, or undefined (absent, not a string, or empty). */
export function declaredNodeEngine(packageJson: Readonly<Record<string, unknown>>): string | undefined {
  const engines = packageJson['engines'];
  if (typeof engines !== 'object' || engines === null || Array.isArray(engines)) return undefined;
  const node = (engines as Record<string, unknown>)['node'];
  return typeof node === 'string' && node.trim() !== '' ? node.trim() : undefined;
}

/**
 * Whether the server ran on a Node its package's `engines.node` leaves out:
 * only for a `#!` script run by a pinned Node interpreter, a declared range
 * this host reads, and a version the interpreter reports.
 */
export async function engineMismatch(declared: string | undefined, interpreter: InterpreterPin | undefined, probe?: InterpreterVersionProbe): Promise<EngineMismatch | undefined> {
  if (declared === undefined || interpreter?.kind !== 'node') return undefined;
  const version = await nodeVersionOf(interpreter.path, probe);
  if (version === undefined || satisfiesRange(version, declared) !== false) return undefined;
  return { declared, interpreter: interpreter.path, version };
}

/**
 * `error` (a failed start) with `details.engines` and a hint that begins by
 * naming the mismatch, when there is one: the likeliest cause, which the
 * server's own words rarely give.
 */
export function withEngineMismatch(error: HostError, mismatch: EngineMismatch | undefined): HostError {
  if (mismatch === undefined) return error;
  return reworded(error, {
    details: { ...error.details, engines: { node: mismatch.declared, interpreter: mismatch.interpreter, interpreter_version: mismatch.version } },
    hint: `The package declares engines.node "${mismatch.declared}" and its server ran on Node ${mismatch.version} (${mismatch.interpreter}), which that range leaves out: the likely cause. Run the host with a Node in that range first on its interpreter search path (the interpreterSearchPath option, else PATH), or install a version of the package made for this Node. ${error.hint}`,
  });
}
