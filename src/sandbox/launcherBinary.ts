import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { err, ok, type Result } from 'neverthrow';
import { elfMachine, HOST_MACHINE } from '../process/diagnoseExecutable.js';
import { replaceableFolder } from './replaceableFolders.js';

/** The launcher's file name, next to the built modules in `dist/` (see scripts/build-launcher.mjs). */
export const LAUNCHER_FILE = 'mcp-plugin-launcher';

function moduleFile(): string {
  // The CommonJS build has __filename; the ES module build and the sources have import.meta.url.
  return typeof __filename === 'string' ? __filename : fileURLToPath(import.meta.url);
}

/**
 * Where the launcher is looked for: beside the built modules (the npm
 * package's `dist/`), and, when this module runs from the sources, the
 * repository's `native/build/` (built by the tests' global setup).
 */
export function launcherCandidates(here: string = moduleFile()): string[] {
  const beside = fileURLToPath(new URL(`./${LAUNCHER_FILE}`, `file://${here}`));
  const fromSources = /[\\/]src[\\/]sandbox[\\/]launcherBinary\.ts$/.test(here);
  return fromSources ? [fileURLToPath(new URL(`../../native/build/${LAUNCHER_FILE}`, `file://${here}`)), beside] : [beside];
}

function elfMachineOfFile(path: string): number | undefined {
  const fd = openSync(path, 'r');
  try {
    const header = Buffer.alloc(20);
    return elfMachine(header.subarray(0, readSync(fd, header, 0, 20, 0)));
  } finally {
    closeSync(fd);
  }
}

/**
 * Why whoever else may rename entries in a directory above the launcher could
 * put a program of theirs at its path after the probe proved it
 * (sandbox/replaceableFolders.ts: a directory owned by neither root nor the
 * host's user, or writable by its group or others without the sticky bit).
 */
function replaceableBy(path: string, uid: number | undefined): string | undefined {
  const found = replaceableFolder(path, uid);
  if (found === undefined) return undefined;
  switch (found.reason) {
    case 'unresolved':
      return `${path} cannot be resolved: ${String(found.cause)}`;
    case 'missing':
      return `${path} can be replaced: ${found.folder} is gone`;
    case 'foreign_owner':
      return `${path} can be replaced: ${found.folder} is owned by uid ${found.ownerUid}, neither root nor the host's user`;
    case 'writable_by_others':
      return `${path} can be replaced: ${found.folder} is writable by its group or others (mode ${found.mode})`;
  }
}

/**
 * Why the program at `path`, which the host runs as itself (root, often),
 * must not be trusted, or `undefined` when it may: it must be a regular
 * executable file owned by root or by the host's own user, writable by
 * neither group nor others (whoever could rewrite it would run code as the
 * host), in directories where no one else can rename another file over it.
 *
 * @param uid - The host's user id.
 */
export function untrustedProgram(path: string, uid: number | undefined = process.getuid?.()): string | undefined {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return `no program at ${path}`;
  }
  if (!stat.isFile()) return `${path} is not a regular file`;
  if (stat.uid !== 0 && stat.uid !== uid) return `${path} is owned by uid ${stat.uid}, neither root nor the host's user`;
  if ((stat.mode & 0o022) !== 0) return `${path} is writable by its group or others (mode ${(stat.mode & 0o777).toString(8)})`;
  if ((stat.mode & 0o100) === 0) return `${path} is not executable`;
  return replaceableBy(path, uid);
}

/**
 * Why the launcher at `path` must not be used, or `undefined` when it may:
 * a program the host may trust ({@link untrustedProgram}), built for this
 * machine.
 */
export function launcherProblem(path: string, arch: string = process.arch, uid: number | undefined = process.getuid?.()): string | undefined {
  const untrusted = untrustedProgram(path, uid);
  if (untrusted !== undefined) return untrusted.startsWith('no program at ') ? `no launcher at ${path}` : untrusted;
  const machine = elfMachineOfFile(path);
  if (machine === undefined) return `${path} is not an ELF executable`;
  if (machine !== HOST_MACHINE[arch]) return `${path} was built for ELF machine ${machine}, not ${arch}`;
  return undefined;
}

/**
 * The first usable launcher among `candidates`, or why none is (each
 * candidate's problem, joined).
 */
export function findLauncher(candidates: readonly string[] = launcherCandidates()): Result<string, string> {
  const problems: string[] = [];
  for (const candidate of candidates) {
    const problem = launcherProblem(candidate);
    if (problem === undefined) return ok(candidate);
    problems.push(problem);
  }
  return err(problems.join('; '));
}

const abis = new Map<string, number>();

/** How many times a launcher that did not run to its answer (a fork refused, a timeout, a signal) is asked again. */
const ABI_ASKS = 3;

/**
 * The running kernel's Landlock ABI as the launcher at `path` reads it
 * (`--landlock-abi`; 0 when Landlock is off, or when the launcher exits
 * without a number, as one too old to know the flag does; only a number is
 * remembered, for the life of the process). It decides whether plugins get
 * Landlock's scopes (ABI 6: abstract Unix sockets and signals), and
 * `describe` reports what it decided. A launcher that never got to answer
 * (spawn failed, timed out, was killed, or the loader or exec failed: exit
 * 126 or 127; {@link ABI_ASKS} times) is an error, not ABI 0: a loaded
 * machine's failed fork must not leave the host's plugins without the scopes.
 */
export function landlockAbi(path: string): Result<number, string> {
  const known = abis.get(path);
  if (known !== undefined) return ok(known);
  let failure = '';
  for (let ask = 0; ask < ABI_ASKS; ask += 1) {
    const answer = spawnSync(path, ['--landlock-abi'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] });
    const ran = answer.error === undefined && answer.signal === null && answer.status !== null && answer.status < 126;
    if (ran) {
      const parsed = answer.status === 0 ? Number.parseInt(answer.stdout.trim(), 10) : Number.NaN;
      if (!Number.isSafeInteger(parsed) || parsed < 0) return ok(0);
      abis.set(path, parsed);
      return ok(parsed);
    }
    failure = answer.error?.message ?? (answer.signal === null ? `exit status ${String(answer.status)}, the loader's or exec's` : `killed by ${answer.signal}`);
  }
  return err(`${path} --landlock-abi did not answer (${failure})`);
}
