import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { isAbsolute } from 'node:path';
import { hostError, type HostError } from '../errors/HostError.js';
import type { PluginCommand } from './VerifiedExecutable.js';

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);
const INHERITED_FD_PATH = /^\/(?:proc\/self\/fd|dev\/fd)\/(\d+)$/;

/** ELF e_machine values of the architectures Node runs on. */
const ELF_MACHINES: Readonly<Record<number, string>> = {
  3: 'x86',
  8: 'mips',
  20: 'ppc',
  21: 'ppc64',
  22: 's390x',
  40: 'arm',
  62: 'x86-64',
  183: 'aarch64',
  243: 'riscv64',
  258: 'loong64',
};

/** The ELF machine a Node `process.arch` runs natively. */
export const HOST_MACHINE: Readonly<Record<string, number>> = {
  ia32: 3,
  mips: 8,
  mipsel: 8,
  ppc: 20,
  ppc64: 21,
  s390x: 22,
  arm: 40,
  x64: 62,
  arm64: 183,
  riscv64: 243,
  loong64: 258,
};

/** What is known about the file a spawn would execute. */
interface ProgramFacts {
  readonly path: string;
  readonly stats: Stats;
  readonly head: Buffer;
}

function readFacts(program: string, executable: PluginCommand): ProgramFacts | NodeJS.ErrnoException {
  const inherited = INHERITED_FD_PATH.exec(program);
  const hostFd = inherited ? executable.inheritFds[Number(inherited[1]) - 3] : undefined;
  try {
    if (hostFd !== undefined) {
      const head = Buffer.alloc(128);
      const n = readSync(hostFd, head, 0, head.length, 0);
      return { path: program, stats: fstatSync(hostFd), head: head.subarray(0, n) };
    }
    const stats = statSync(program);
    let head = Buffer.alloc(0);
    if (stats.isFile()) {
      const fd = openSync(program, fsConstants.O_RDONLY);
      try {
        head = Buffer.alloc(128);
        head = head.subarray(0, readSync(fd, head, 0, head.length, 0));
      } finally {
        closeSync(fd);
      }
    }
    return { path: program, stats, head };
  } catch (e) {
    return e as NodeJS.ErrnoException;
  }
}

/** The `e_machine` of an ELF file from its first 20 bytes or more, in the file's own byte order; `undefined` when it is not ELF. */
export function elfMachine(head: Buffer): number | undefined {
  if (head.length < 20 || !head.subarray(0, 4).equals(ELF_MAGIC)) return undefined;
  return head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
}

function problemOf(facts: ProgramFacts, platform: NodeJS.Platform, arch: string): { message: string; details: Record<string, unknown> } | undefined {
  const mode = (facts.stats.mode & 0o7777).toString(8).padStart(4, '0');
  const details: Record<string, unknown> = { path: facts.path, mode, size: facts.stats.size };
  if (!facts.stats.isFile()) return { message: `${facts.path} is not a regular file`, details };
  if ((facts.stats.mode & 0o111) === 0) return { message: `${facts.path} is not executable (mode ${mode})`, details: { ...details, errno: 'EACCES' } };
  const machine = elfMachine(facts.head);
  if (machine !== undefined) {
    const architecture = ELF_MACHINES[machine] ?? `ELF machine ${machine}`;
    const withArch = { ...details, architecture, elf_machine: machine };
    const hostMachine = HOST_MACHINE[arch];
    if (platform === 'linux' && hostMachine !== undefined && machine !== hostMachine) {
      return { message: `${facts.path} is built for ${architecture}, but this host is ${ELF_MACHINES[hostMachine] ?? arch}`, details: { ...withArch, errno: 'ENOEXEC' } };
    }
    return undefined;
  }
  if (facts.head.subarray(0, 2).toString('latin1') === '#!') {
    const interpreter = facts.head.subarray(2).toString('latin1').split('\n')[0]!.trim().split(/\s+/)[0] ?? '';
    try {
      if (!statSync(interpreter).isFile()) throw new Error('not a file');
      return undefined;
    } catch {
      return { message: `${facts.path} names the interpreter ${interpreter || '(none)'}, which does not exist`, details: { ...details, interpreter, errno: 'ENOENT' } };
    }
  }
  if (platform === 'linux') {
    return { message: `${facts.path} is neither an ELF binary nor a #! script`, details: { ...details, errno: 'ENOEXEC' } };
  }
  return undefined;
}

/**
 * Checks, before spawning, that the program of `executable` can run on this
 * host, and explains why not the way a person debugging it needs (path, mode
 * bits, architecture of the binary, errno), in the spirit of go-plugin's
 * "exec format error" notes. Programs named without a slash are looked up by
 * the OS at spawn time and are not checked here.
 *
 * @param spawnError - The error a spawn attempt already produced, if any; its errno is reported.
 */
export function diagnoseExecutable(
  executable: PluginCommand,
  spawnError?: NodeJS.ErrnoException,
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
): HostError | undefined {
  const program = executable.argv[0];
  if (program === undefined || program === '') {
    return hostError('PLUGIN_SPAWN_FAILED', 'The plugin command line is empty.', { details: { argv: [...executable.argv] } });
  }
  const errno = spawnError?.code;
  const checkable = isAbsolute(program) || program.includes('/');
  const facts = checkable ? readFacts(program, executable) : undefined;
  if (facts instanceof Error) {
    return hostError('PLUGIN_SPAWN_FAILED', `Cannot start the plugin: ${program} does not exist or cannot be read (${facts.code ?? facts.message})`, {
      details: { path: program, errno: errno ?? facts.code },
      cause: spawnError ?? facts,
    });
  }
  const problem = facts ? problemOf(facts, platform, arch) : undefined;
  if (problem) {
    return hostError('PLUGIN_SPAWN_FAILED', `Cannot start the plugin: ${problem.message}`, {
      details: errno === undefined ? problem.details : { ...problem.details, errno },
      cause: spawnError,
    });
  }
  if (spawnError) {
    return hostError('PLUGIN_SPAWN_FAILED', `Cannot start the plugin ${program}: ${spawnError.message}`, {
      details: { path: program, errno },
      cause: spawnError,
    });
  }
  return undefined;
}
