#!/usr/bin/env node
/**
 * The `mcp-plugin-host` executable: wires the process (argv, stdio,
 * environment, signals) to {@link runCli}.
 */
import { runCli } from './cli.js';
import { EXIT_CODES } from './exitCodes.js';

const FORCED_EXIT_MS = 5_000;

const interrupted = new AbortController();
const onSignal = (): void => {
  if (interrupted.signal.aborted) process.exit(EXIT_CODES.interrupted);
  // The first signal cancels the running call and lets the host stop its
  // plugins; a second one, or a command that does not finish soon, exits.
  interrupted.abort();
  setTimeout(() => process.exit(EXIT_CODES.interrupted), FORCED_EXIT_MS).unref();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
// A reader that went away (`mcp-plugin-host list | head`) is not an error of
// the command: stop its work as for a signal and write nothing more.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    interrupted.abort();
  });
}

void runCli(process.argv.slice(2), process, interrupted.signal).then((code) => {
  const final = interrupted.signal.aborted ? EXIT_CODES.interrupted : code;
  process.exitCode = final;
  // The host is closed by now; a stray handle must not keep the CLI running.
  setTimeout(() => process.exit(final), 1_000).unref();
});
