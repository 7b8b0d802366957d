import { readdirSync, readFileSync } from 'node:fs';

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may itself contain spaces and parentheses; fields resume after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The process ids of every living descendant of `rootPid`, parents before
 * children. Reads `/proc`, so it sees processes in child PID namespaces too;
 * on systems without `/proc` it returns an empty list and callers rely on
 * process groups alone.
 */
export function descendantsOf(rootPid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const ppid = parentOf(pid);
    if (ppid === undefined) continue;
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const out: number[] = [];
  const queue = [...(children.get(rootPid) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * The command name of a living process (`/proc/<pid>/comm`: the file name it
 * last executed, cut to 15 bytes, unless it renamed itself), or `undefined`
 * when it is gone or there is no `/proc`.
 */
export function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').replace(/\n$/, '');
  } catch {
    return undefined;
  }
}

/** The state letter of a process (`/proc/<pid>/stat`: `R`, `S`, `Z` for a zombie…), or `undefined` when it is gone or there is no `/proc`. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Sends `signal` to one process or process group (negative id), ignoring ones already gone. */
export function sendSignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    // ESRCH: already gone; EPERM cannot happen for our own children.
  }
}

const O_CLOEXEC = 0o2000000;

/**
 * Descriptors above stderr that this process holds without close-on-exec:
 * every child (and so every plugin) inherits them. Node opens its own
 * descriptors close-on-exec, so these come from whatever started the host.
 */
export function inheritableDescriptors(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fdinfo');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    try {
      const flags = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
    } catch {
      // Closed meanwhile (the directory listing itself, for one).
    }
  }
  return out.sort((a, b) => a - b);
}
