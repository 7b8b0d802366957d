/** Starting a bundled helper script as a child and waiting for its lines and exit. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A running helper with its output lines so far. */
export interface Helper {
  /** The child process. */
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves with the first stdout line equal to `line` (rejects if the child exits first). */
  waitFor(line: string): Promise<void>;
  /** Resolves with exit code and signal, and stdout/stderr text. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Starts `node [...nodeOptions] <script> ...args`. */
export function startHelper(script: string, args: readonly string[], nodeOptions: readonly string[] = []): Helper {
  const child = spawn(process.execPath, [...nodeOptions, script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: { line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const w of waiters.filter((x) => x.line === line)) w.resolve();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => {
      for (const w of waiters) w.reject(new Error(`helper exited (${code ?? signal}) before "${w.line}": ${[...lines, stderr].join('\n')}`));
      resolve({ code, signal, stdout: lines.join('\n'), stderr });
    }),
  );
  return {
    child,
    exited,
    waitFor: (line) =>
      lines.includes(line) ? Promise.resolve() : new Promise<void>((resolve, reject) => waiters.push({ line, resolve, reject })),
  };
}
