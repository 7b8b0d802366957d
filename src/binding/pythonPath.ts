/**
 * A Python interpreter pin's search path: directories of the install root
 * that the verified-main bootstrap (pythonLoader.ts) puts on `sys.path`
 * where `PYTHONPATH` would. A package names them (an MCP Bundle's
 * `mcp_config.env.PYTHONPATH`, `${__dirname}/server/lib`) and the binding
 * records them relative to the install root, normalized like the
 * executable's path, so that neither the host's environment nor an edited
 * path can point the interpreter at code outside the pinned tree.
 */
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import type { InterpreterPin } from './interpreter.js';
import { normalizeExecutablePath } from './relativePath.js';
import { untrusted } from './untrusted.js';

/** `pin` with `dirs` (relative to the install root) as its search path; only a Python interpreter has one. */
export function withPythonPath(pin: InterpreterPin | undefined, dirs: readonly string[], scriptPath: string): Result<InterpreterPin, HostError> {
  if (pin?.kind !== 'python') {
    return err(untrusted('invalid_path', `${scriptPath} is not run by a Python interpreter, so it takes no Python search path.`, { path: scriptPath }));
  }
  const normalized: string[] = [];
  for (const dir of dirs) {
    const relative = normalizeExecutablePath(dir);
    if (relative.isErr()) return err(relative.error);
    normalized.push(relative.value);
  }
  return ok({ ...pin, python_path: normalized });
}

/** Whether a recorded search path is one {@link withPythonPath} could have written. */
export function isPinnedPythonPath(dirs: readonly string[]): boolean {
  return dirs.every((dir) => normalizeExecutablePath(dir).map((relative) => relative === dir).unwrapOr(false));
}
