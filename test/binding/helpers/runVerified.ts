/** Spawning a VerifiedExecutable the way a spawner does: inherited fds as 3, 4, …, released after spawn. */
import { spawn } from 'node:child_process';
import type { VerifiedExecutable } from '../../../src/process/VerifiedExecutable.js';

/** How a run ended. */
export interface RunOutcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `exe` (optionally wrapped, e.g. by bwrap) and collects its output. */
export function runVerified(exe: VerifiedExecutable, wrapper: readonly string[] = []): Promise<RunOutcome> {
  const argv = [...wrapper, ...exe.argv];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: exe.installRoot, stdio: ['ignore', 'pipe', 'pipe', ...exe.inheritFds] });
    exe.release();
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
