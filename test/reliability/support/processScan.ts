/**
 * Finds processes by a marker in their environment, the way a test proves
 * that no plugin process (grandchildren included) outlived the host: every
 * fault plugin gets FAULT_MARKER=<unique value> and passes it on to whatever
 * it forks. Zombies (already dead, waiting to be reaped) do not count.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** A living process that carries the marker. */
export interface MarkedProcess {
  /** Its process id (in the host's PID namespace). */
  readonly pid: number;
  /** Its command line, spaces between arguments. */
  readonly cmdline: string;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined;
  }
}

function isZombie(pid: number): boolean {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === undefined) return true;
  return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}

/** Every living process whose environment holds `FAULT_MARKER=<marker>`. */
export function processesWithMarker(marker: string): MarkedProcess[] {
  const needle = `FAULT_MARKER=${marker}\u0000`;
  const out: MarkedProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const environ = read(`/proc/${pid}/environ`);
    if (environ === undefined || !`${environ}\u0000`.includes(needle) || isZombie(pid)) continue;
    out.push({ pid, cmdline: (read(`/proc/${pid}/cmdline`) ?? '').split('\u0000').join(' ').trim() });
  }
  return out;
}

/** Polls until no marked process lives or `waitMs` passed; returns the survivors. */
export async function survivorsAfter(marker: string, waitMs: number): Promise<MarkedProcess[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const found = processesWithMarker(marker);
    if (found.length === 0 || Date.now() >= deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Kills marked processes a failing scenario left behind, so one failure does not leak into the next. */
export function killMarked(marker: string): void {
  for (const { pid } of processesWithMarker(marker)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
