/**
 * `mcp-plugin-host serve` as a real subprocess (the CLI from source through
 * tsx), serving HTTP: started, waited for until it says where it listens, and
 * ended after the test.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { waitUntil } from './eventually.js';

/** A started `serve`: its process, the URL it named, and what it wrote so far. */
export interface ServeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** The URL of its `listening on <url>` line ('' when it exited first). */
  readonly url: string;
  /** Its stderr so far. */
  stderr(): string;
  /** Its stdout so far. */
  stdout(): string;
}

/** The `serve` processes of a test file; {@link ServeProcesses.cleanup} ends those still running. */
export class ServeProcesses {
  readonly #children: ChildProcessWithoutNullStreams[] = [];

  /**
   * Starts `serve ...args` with the test's environment and `env` over it, and
   * waits (up to 60 s: a bound, not a measurement) until its stderr matches
   * `ready` (by default, its `listening on` line) or it exits.
   */
  async start(args: readonly string[], options: { readonly env?: Readonly<Record<string, string>>; readonly ready?: RegExp } = {}): Promise<ServeProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI_SOURCE, 'serve', ...args], { cwd: REPO, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#children.push(child);
    let stderr = '';
    let stdout = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const ready = options.ready ?? /listening on \S+\n/;
    await waitUntil(() => ready.test(stderr) || child.exitCode !== null, 60_000);
    return { child, url: /listening on (\S+)/.exec(stderr)?.[1] ?? '', stderr: () => stderr, stdout: () => stdout };
  }

  /** Ends (SIGTERM) each process still running, and waits for it to exit. */
  async cleanup(): Promise<void> {
    for (const child of this.#children.splice(0)) {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
  }
}
