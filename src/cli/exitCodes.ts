import type { HostError } from '../errors/HostError.js';
import { describeErrorCode } from '../errors/registry.js';

/**
 * The CLI's exit codes. Scripts branch on these, so they never change
 * meaning; `--help` and docs/cli.md print the same table.
 */
export const EXIT_CODES = {
  /** The command did what it was asked. */
  ok: 0,
  /** A call, a canary or the host failed at run time. */
  runtime: 1,
  /** The command line is wrong: unknown command or option, bad value, missing argument. */
  usage: 2,
  /** `validate` or `install` refused the package for a manifest or package reason. */
  validation: 3,
  /** No enforcing OS sandbox on this machine (PLUGIN_SANDBOX_UNSUPPORTED). */
  sandboxUnsupported: 4,
  /** `validate` found no violation but skipped checks that need the OS sandbox, which this machine lacks. */
  checksSkipped: 5,
  /** Interrupted by SIGINT / SIGTERM. */
  interrupted: 130,
} as const;

/** One of {@link EXIT_CODES}. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** The exit-code table as `--help` prints it. */
export const EXIT_CODE_LINES: readonly (readonly [ExitCode, string])[] = [
  [EXIT_CODES.ok, 'ok'],
  [EXIT_CODES.runtime, 'runtime failure (a call, canary or host error)'],
  [EXIT_CODES.usage, 'usage error (bad command, option or argument)'],
  [EXIT_CODES.validation, 'validation failure (validate/install refused the package)'],
  [EXIT_CODES.sandboxUnsupported, 'no enforcing OS sandbox (PLUGIN_SANDBOX_UNSUPPORTED)'],
  [EXIT_CODES.checksSkipped, 'validate passed its static checks but skipped the sandboxed ones (no sandbox; --strict fails instead)'],
  [EXIT_CODES.interrupted, 'interrupted'],
];

/**
 * The exit code of a failed command. Install-stage codes mean "the package
 * was refused" only where a package is being checked (`validate`,
 * `install`); elsewhere the same code (say a tampered executable found at
 * spawn time) is a run-time failure. HOST_INVALID_OPTIONS always comes from
 * something the user typed, so it is a usage error.
 */
export function exitCodeFor(error: HostError, checkingPackage: boolean): ExitCode {
  if (error.code === 'PLUGIN_SANDBOX_UNSUPPORTED') return EXIT_CODES.sandboxUnsupported;
  if (error.code === 'HOST_INVALID_OPTIONS') return EXIT_CODES.usage;
  if (checkingPackage && describeErrorCode(error.code).stage === 'install') return EXIT_CODES.validation;
  return EXIT_CODES.runtime;
}
