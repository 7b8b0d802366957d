/** CPU time of processes by pid, read from /proc (Linux), for benches that say where each process's time goes. */
import { readdirSync, readFileSync } from 'node:fs';

/** The parent of each process now running. */
function parents(): Map<number, number> {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name in parentheses may hold spaces; the fields after it are plain.
      const ppid = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
      parentOf.set(Number(entry), Number(ppid));
    } catch {
      // The process ended while the table was read.
    }
  }
  return parentOf;
}

/** CPU time all threads of `pid` have used, in µs (0 once it is gone). */
function threadsCpuUs(pid: number): number {
  let ns = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    // The process (or one of its threads) ended while it was read.
  }
  return ns / 1000;
}

/** The processes under `root` (not `root` itself), leaving out `excluded` and everything under them. */
export function descendants(root: number, excluded: readonly number[]): number[] {
  const parentOf = parents();
  const found: number[] = [];
  for (const pid of parentOf.keys()) {
    for (let at = pid; at > 1 && !excluded.includes(at); at = parentOf.get(at) ?? 0) {
      if (parentOf.get(at) === root) {
        found.push(pid);
        break;
      }
    }
  }
  return found;
}

/** CPU time the processes `pids` have used so far, in µs, all their threads together. */
export function cpuUsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + threadsCpuUs(pid), 0);
}
