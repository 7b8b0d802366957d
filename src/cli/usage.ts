import { hostError } from '../errors/HostError.js';
import type { CommandName } from './args.js';
import type { CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import type { Output } from './Output.js';

/** A usage problem as a registry error (HOST_INVALID_OPTIONS) pointing at the right help. */
export function usageError(message: string, command?: CommandName) {
  return hostError('HOST_INVALID_OPTIONS', message, {
    hint: `Run '${PROGRAM} ${command === undefined ? '--help' : `${command} --help`}' for usage.`,
    details: command === undefined ? {} : { command },
  });
}

/** Prints a usage problem; exit code 2. */
export function printUsageProblem(out: Output, message: string, command?: CommandName): ExitCode {
  out.failure(usageError(message, command));
  return EXIT_CODES.usage;
}

/** A usage problem found inside a command. */
export function usageFailure(ctx: CommandContext, message: string, command: CommandName): ExitCode {
  return printUsageProblem(ctx.out, message, command);
}
