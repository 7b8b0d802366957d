/**
 * The Python 3 interpreter the way a user's machine has it: whatever
 * `python3` on PATH runs (a Debian /usr/bin/python3, a pyenv or venv build
 * behind a shim), asked for its own executable, then resolved through its
 * links to the real file a binding of `#!/usr/bin/env python3` pins.
 */
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';

function pythonExecutable(): string {
  try {
    return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  } catch (cause) {
    throw new Error(`no working python3 on PATH (${process.env.PATH ?? ''}); the Python tests need one`, { cause });
  }
}

/** The interpreter `python3` on PATH runs, as it names itself (sys.executable). */
export const PYTHON3_EXECUTABLE: string = pythonExecutable();
/** Its real file: what a binding of `#!/usr/bin/env python3` pins when PYTHON3_DIR is searched. */
export const PYTHON3_REAL: string = realpathSync(PYTHON3_EXECUTABLE);
/** The folder holding it, for a test's search path. */
export const PYTHON3_DIR: string = dirname(PYTHON3_EXECUTABLE);
