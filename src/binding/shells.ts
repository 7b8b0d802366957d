/**
 * Shell interpreters are refused as executables and as `#!` interpreters: a
 * shell re-reads its script and resolves every command through PATH at run
 * time, so a pinned digest of the script would not pin what runs.
 */
import { basename } from 'node:path';
import shellInterpreters from '../../etc/shell-interpreters.json' with { type: 'json' };

const SHELL_NAMES: ReadonlySet<string> = new Set(shellInterpreters.names);

/** A program's name as compared with the denylist: lower-case, without a Windows program suffix. */
function programName(path: string): string {
  return basename(path.replace(/\\/g, '/')).toLowerCase().replace(/\.(exe|com|bat|cmd|ps1)$/, '');
}

/** Whether a path or program name names a shell interpreter. */
export function isShellName(path: string): boolean {
  return SHELL_NAMES.has(programName(path));
}

/** Whether a resolved interpreter is CPython, which runs the verified source under the script's own path. */
export function isPythonName(path: string): boolean {
  return /^python(\d+(\.\d+)?)?$/.test(programName(path));
}

/** Whether a resolved interpreter is Node.js, which gets the verified-source loader. */
export function isNodeName(path: string): boolean {
  return /^node(js)?(\d+)?$/.test(programName(path));
}
