/**
 * Reading what kind of file an executable is, and parsing a `#!` line the way
 * Linux does: one interpreter path and at most one argument string, with
 * `/usr/bin/env` (plain or `-S`) understood so that its program can be
 * resolved once, at install, instead of through PATH at every run.
 */
import { basename, isAbsolute } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';
import { untrusted } from './untrusted.js';

/** Bytes the kernel reads to recognise a `#!` line; a longer line is truncated by it, so we refuse it. */
export const SHEBANG_MAX_BYTES = 256;

/** What an executable file is, from its first bytes. */
export type ExecutableFormat = 'native' | 'script' | 'unknown';

const NATIVE_MAGICS: readonly (readonly number[])[] = [
  [0x7f, 0x45, 0x4c, 0x46], // ELF
  [0xfe, 0xed, 0xfa, 0xce], [0xfe, 0xed, 0xfa, 0xcf], [0xce, 0xfa, 0xed, 0xfe], [0xcf, 0xfa, 0xed, 0xfe], // Mach-O
  [0xca, 0xfe, 0xba, 0xbe], // Mach-O universal
];

/**
 * The format of a file from its head. Anything that is neither a native
 * program nor a `#!` script is refused, because `execvp` hands a file the
 * kernel cannot run to `/bin/sh`.
 */
export function formatOf(head: Buffer): ExecutableFormat {
  if (head.length >= 2 && head[0] === 0x23 && head[1] === 0x21) return 'script';
  if (NATIVE_MAGICS.some((magic) => magic.every((byte, i) => head[i] === byte))) return 'native';
  return 'unknown';
}

/** A parsed `#!` line. */
export interface Shebang {
  /** The interpreter as written: an absolute path, or a program name to find on PATH when `viaEnv`. */
  readonly program: string;
  /** Whether the line went through `env`, i.e. needs a PATH lookup (done once, at install). */
  readonly viaEnv: boolean;
  /** Arguments the line passes to the interpreter before the script path. */
  readonly args: readonly string[];
}

/** Parses the `#!` line at the start of `head` (which must start with `#!`). */
export function parseShebang(head: Buffer, scriptPath: string): Result<Shebang, HostError> {
  const newline = head.indexOf(0x0a);
  if (newline < 0 && head.length >= SHEBANG_MAX_BYTES) {
    return err(untrusted('unsupported_shebang', `The #! line of ${scriptPath} is longer than ${SHEBANG_MAX_BYTES} bytes.`, { path: scriptPath }));
  }
  const line = head.subarray(2, newline < 0 ? head.length : newline).toString('utf8').replace(/\r$/, '').trim();
  const split = line.search(/[ \t]/);
  const interpreter = split < 0 ? line : line.slice(0, split);
  const rest = split < 0 ? '' : line.slice(split).trim();
  const refuse = (why: string): Result<Shebang, HostError> =>
    err(untrusted('unsupported_shebang', `The #! line of ${scriptPath} (${JSON.stringify(line)}) ${why}.`, { path: scriptPath, shebang: line }));
  if (!isAbsolute(interpreter)) return refuse('does not name an absolute interpreter path');
  if (basename(interpreter) !== 'env') return ok({ program: interpreter, viaEnv: false, args: rest === '' ? [] : [rest] });

  const words = rest.split(/[ \t]+/).filter((w) => w !== '');
  if (words[0] === '-S') words.shift();
  else if (words[0]?.startsWith('-S')) words[0] = words[0].slice(2);
  else if (words.length > 1) return refuse('passes several words to env without -S');
  const program = words[0];
  if (program === undefined) return refuse('names no program after env');
  if (program.startsWith('-') || program.includes('=')) return refuse('uses env options or assignments other than -S');
  if (program.includes('/')) return refuse('gives env a path instead of a program name');
  return ok({ program, viaEnv: true, args: words.slice(1) });
}
