import { ioError } from '../index.js';
import { parseInvocation, wantsJson, type CommandName } from './args.js';
import type { CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { commandHelp, generalHelp, shortUsage } from './help.js';
import { installCommand } from './installCommand.js';
import { infoCommand, listCommand } from './inventoryCommands.js';
import { canaryCommand, reloadCommand, removeCommand, unquarantineCommand } from './lifecycleCommands.js';
import { Output, type Terminal } from './Output.js';
import { runCommand } from './runCommand.js';
import { serveCommand } from './serveCommand.js';
import { setupCommand } from './setupCommand.js';
import { printUsageProblem } from './usage.js';
import { validateCommand } from './validateCommand.js';
import { wrapCommand } from './wrapCommand.js';
import { packageVersion } from './version.js';

const HANDLERS: Readonly<Record<CommandName, (ctx: CommandContext) => Promise<ExitCode>>> = {
  validate: validateCommand,
  install: installCommand,
  list: listCommand,
  info: infoCommand,
  run: runCommand,
  remove: removeCommand,
  reload: reloadCommand,
  canary: canaryCommand,
  setup: setupCommand,
  unquarantine: unquarantineCommand,
  wrap: wrapCommand,
  serve: serveCommand,
};

/**
 * Runs one CLI invocation and returns its exit code. Everything the command
 * prints goes to `terminal`; `signal` aborts a running tool call (SIGINT).
 */
export async function runCli(argv: readonly string[], terminal: Terminal, signal: AbortSignal): Promise<ExitCode> {
  const json = wantsJson(argv);
  const noColor = argv.includes('--no-color');
  const parsed = parseInvocation(argv);
  if (!parsed.ok) {
    const out = new Output(terminal, json, noColor);
    const code = printUsageProblem(out, parsed.problem.message, parsed.problem.command);
    if (parsed.problem.command === undefined) out.note(shortUsage());
    return code;
  }
  const invocation = parsed.value;
  const out = new Output(terminal, invocation.kind === 'command' ? invocation.flags.json : json, noColor);
  switch (invocation.kind) {
    case 'help': {
      const help = invocation.command === undefined ? generalHelp(out.style) : commandHelp(invocation.command, out.style);
      if (out.json) out.data({ ok: true, help });
      else terminal.stdout.write(help);
      return EXIT_CODES.ok;
    }
    case 'version': {
      const version = packageVersion();
      out.data({ ok: true, version });
      out.line(version);
      return EXIT_CODES.ok;
    }
    case 'command': {
      const ctx: CommandContext = { flags: invocation.flags, positionals: invocation.positionals, out, terminal, signal };
      try {
        return await HANDLERS[invocation.command](ctx);
      } catch (cause) {
        // Commands return expected failures as values; this is a file system
        // failure of the CLI's own work (scratch directories, copies).
        out.failure(ioError(`Running the ${invocation.command} command`, undefined, cause));
        return EXIT_CODES.runtime;
      }
    }
  }
}
