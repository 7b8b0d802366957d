/**
 * A server that needs a newer Node than the one it was started with, when its
 * package does not say so: @dynatrace-oss/dynatrace-mcp-server@2.1.2 declares
 * no `engines`, bundles an undici that calls Node 22.10's
 * `markAsUncloneable`, and dies on Node 20 with "TypeError:
 * webidl.util.markAsUncloneable is not a function", which names no version.
 * The engines check (npmEngines.ts) reads only `engines.node`; this reads the
 * errors themselves (etc/npm-install.json `newerNodeSigns`) and names the
 * Node the server ran on.
 */
import type { InterpreterPin } from '../binding/interpreter.js';
import { nodeVersionOf, type InterpreterVersionProbe } from '../binding/interpreterVersion.js';
import { reworded, type HostError } from '../errors/HostError.js';
import settings from '../../etc/npm-install.json' with { type: 'json' };

const SIGNS: readonly RegExp[] = settings.newerNodeSigns.map((source) => new RegExp(source));

/** What a failed start printed that a newer Node would not have, and the Node it ran on. */
export interface NewerNodeSign {
  /** The words that gave it away, as the server printed them. */
  readonly sign: string;
  /** The interpreter the server was started with. */
  readonly interpreter: string;
  /** That interpreter's version (`20.20.2`). */
  readonly version: string;
}

const ERROR_LINE = new RegExp(settings.stderrErrorLine);

/**
 * The line of `text` with the first of the newer-Node signs, as it appears
 * there: a line that names an error first, since Node prints the source line
 * that threw (`throw new ERR_UNKNOWN_BUILTIN_MODULE(url);`) above the error.
 */
export function newerNodeSignIn(text: string): string | undefined {
  const lines = text.split('\n').map((line) => line.trim());
  for (const sign of SIGNS) {
    const line = lines.find((l) => ERROR_LINE.test(l) && sign.test(l)) ?? lines.find((l) => sign.test(l));
    if (line === undefined) continue;
    return line.length > settings.quotedStderrLineMaxChars ? `${line.slice(0, settings.quotedStderrLineMaxChars)}…` : line;
  }
  return undefined;
}

/**
 * Whether a failed start of a Node server printed one of the errors a Node
 * gives code written for a newer one: only for a server run by a pinned Node
 * interpreter whose version is known.
 */
export async function newerNodeSign(error: HostError, interpreter: InterpreterPin | undefined, probe?: InterpreterVersionProbe): Promise<NewerNodeSign | undefined> {
  if (interpreter?.kind !== 'node') return undefined;
  const tail = error.details['stderr_tail'];
  // The stderr first: the message may quote the same line amid words of the host's own.
  const sign = newerNodeSignIn(typeof tail === 'string' ? tail : '') ?? newerNodeSignIn(error.message);
  if (sign === undefined) return undefined;
  const version = await nodeVersionOf(interpreter.path, probe);
  return version === undefined ? undefined : { sign, interpreter: interpreter.path, version };
}

/**
 * `error` with `details.newer_node` and a hint that begins by naming the Node
 * the server ran on, when a sign was found and the package declares no
 * `engines.node`: a declared range that admits this Node is the author's word
 * (npmEngines.ts says nothing then either). Worded as a likelihood: a
 * package's own bug can print the same words.
 */
export function withNewerNodeSign(error: HostError, found: NewerNodeSign | undefined, declared: string | undefined): HostError {
  if (found === undefined || declared !== undefined) return error;
  return reworded(error, {
    details: { ...error.details, newer_node: { sign: found.sign, interpreter: found.interpreter, interpreter_version: found.version } },
    hint: `Its server ran on Node ${found.version} (${found.interpreter}) and failed with "${found.sign}", what this Node prints for code written for a newer one. The package declares no engines.node, but it may need a newer Node (its README or changelog may say which): put one first on the host's interpreter search path (the interpreterSearchPath option, else PATH), or install an older version of the package. ${error.hint}`,
  });
}
