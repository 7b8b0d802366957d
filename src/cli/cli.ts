import { ioError } from '../errors/ioError.js';
import { parseInvocation, wantsJson, type CommandName } from './args.js';
import type { CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { commandHelp, generalHelp, shortUsage } from './help.js';
import { Output, type Terminal } from './Output.js';
import { terminalText } from './style.js';
import { printUsageProblem } from './usage.js';
import { packageVersion } from './version.js';

type Handler = (ctx: CommandContext) => Promise<ExitCode>;

/**
 * Each command's module is imported when that command runs, so `--version`,
 * `--help` and a lone-manifest `validate` never load the sandbox, the
 * catalog or the MCP SDK (half a second of start-up on a small machine).
 */
const HANDLERS: Readonly<Record<CommandName, () => Promise<Handler>>> = {
  init: async () => (await import('./initCommand.js')).initCommand,
  validate: async () => (await import('./validateCommand.js')).validateCommand,
  install: async () => (await import('./installCommand.js')).installCommand,
  list: async () => (await import('./inventoryCommands.js')).listCommand,
  info: async () => (await import('./inventoryCommands.js')).infoCommand,
  tools: async () => (await import('./toolsCommand.js')).toolsCommand,
  run: async () => (await import('./runCommand.js')).runCommand,
  remove: async () => (await import('./lifecycleCommands.js')).removeCommand,
  reload: async () => (await import('./lifecycleCommands.js')).reloadCommand,
  canary: async () => (await import('./lifecycleCommands.js')).canaryCommand,
  setup: async () => (await import('./setupCommand.js')).setupCommand,
  unquarantine: async () => (await import('./lifecycleCommands.js')).unquarantineCommand,
  quarantine: async () => (await import('./lifecycleCommands.js')).quarantineCommand,
  wrap: async () => (await import('./wrapCommand.js')).wrapCommand,
  serve: async () => (await import('./serveCommand.js')).serveCommand,
  profile: async () => (await import('./profileCommand.js')).profileCommand,
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
  const out = new Output(terminal, invocation.kind === 'command' ? invocation.flags.json : json, noColor, invocation.kind === 'command' && invocation.flags.format === 'github');
  switch (invocation.kind) {
    case 'help': {
      const help = invocation.command === undefined ? generalHelp(out.style) : commandHelp(invocation.command, out.style);
      if (out.json) out.data({ ok: true, help });
      else terminal.stdout.write(terminalText(help));
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
        const handler = await HANDLERS[invocation.command]();
        return await handler(ctx);
      } catch (cause) {
        // Commands return expected failures as values; this is a file system
        // failure of the CLI's own work (scratch directories, copies).
        out.failure(ioError(`Running the ${invocation.command} command`, undefined, cause));
        return EXIT_CODES.runtime;
      }
    }
  }
}
