import { err, ok, type Result } from 'neverthrow';
import { EnvDenylist } from '../env/EnvDenylist.js';
import { hostError } from '../errors/HostError.js';
import type { CredentialView, HostError, PluginHost } from '../index.js';
import { fail, failInMissingProfile, withHost, type CommandContext } from './context.js';
import type { ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { reportCanary } from './lifecycleCommands.js';
import { authChecklist } from './present.js';
import { ask, readAll } from './prompt.js';
import { oneLineField, terminalText } from './style.js';
import { usageError } from './usage.js';

/** The credentials a plugin declares, as the inventory shows them: by alias, never by env name. */
async function declaredCredentials(host: PluginHost, name: string): Promise<Result<readonly CredentialView[], HostError>> {
  return (await host.info(name)).map((info) => info.credential_descriptors);
}

// `--set NAME=-`: the value comes from stdin, so it is never in this process's command line.
const FROM_STDIN = '-';

/**
 * The value `--set NAME=-` names: typed on a terminal with the input hidden,
 * or all of piped stdin without its final line break.
 */
async function valueFromStdin(ctx: CommandContext, key: string): Promise<string> {
  if (ctx.terminal.stdin.isTTY === true) return ask(ctx.terminal, `  ${oneLineField(key)} (input hidden): `, { hidden: true });
  return (await readAll(ctx.terminal.stdin)).replace(/\r?\n$/, '');
}

// The shipped rules with the GUM preset's prefixes: the widest list, as the CLI cannot tell which preset a caller meant.
const HOST_ENV_RULES = new EnvDenylist();

/**
 * `--set NAME` (no value) reads $NAME from this process's environment. A
 * name the denylist keeps from plugins is the host user's own credential
 * there (their OPENAI_API_KEY, GITHUB_TOKEN…): a plugin's README asking for
 * `setup <plugin> --set GITHUB_TOKEN` would hand it over. The value must be
 * given on purpose instead, on stdin.
 */
function deniedEnvRead(key: string): HostError | undefined {
  const rule = HOST_ENV_RULES.ruleFor(key);
  if (rule === undefined) return undefined;
  const name = oneLineField(key);
  return hostError('HOST_INVALID_OPTIONS', `--set ${name} would read $${name} from this shell's environment, a name no plugin is given from the host's environment`, {
    details: { command: 'setup', reason: 'denylisted_env_read', rule },
    hint: `Give the value for this plugin on purpose: --set ${name}=${FROM_STDIN} and type or pipe it on stdin (for example: printenv ${name} | ${PROGRAM} setup <plugin> --set ${name}=${FROM_STDIN}, if the plugin should have the same value as this shell).`,
  });
}

/**
 * Resolves `--set KEY=value`, `--set KEY=-` (value from stdin) and
 * `--set KEY` (value from this process's environment, refused for a
 * denylisted KEY: {@link deniedEnvRead}). KEY is a
 * credential's alias or its env name; the host refuses keys the plugin does
 * not declare. A value typed in the command line is taken, with a warning:
 * other users see it in the process list, and the shell keeps it in history.
 */
async function assignments(ctx: CommandContext): Promise<Result<Map<string, string>, HostError>> {
  const values = new Map<string, string>();
  const fromStdin = ctx.flags.set.filter((item) => item.endsWith(`=${FROM_STDIN}`));
  if (fromStdin.length > 1) return err(usageError(`only one --set NAME=${FROM_STDIN} can read stdin; give the others as --set NAME (from the environment)`, 'setup'));
  for (const item of ctx.flags.set) {
    const eq = item.indexOf('=');
    const key = eq === -1 ? item : item.slice(0, eq);
    const typed = eq === -1 ? undefined : item.slice(eq + 1);
    const denied = typed === undefined ? deniedEnvRead(key) : undefined;
    if (denied !== undefined) return err(denied);
    const value = typed === undefined ? ctx.terminal.env[key] : typed === FROM_STDIN ? await valueFromStdin(ctx, key) : typed;
    if (value === undefined || value === '') {
      const why = typed === undefined ? `the environment variable ${key} is not set` : typed === FROM_STDIN ? 'stdin gave no value' : 'the value is empty';
      return err(usageError(`--set ${key}: ${why}`, 'setup'));
    }
    if (typed !== undefined && typed !== FROM_STDIN) {
      ctx.terminal.stderr.write(
        `warning: --set ${oneLineField(key)}=<value> puts the secret in the command line, where other users see it in the process list and the shell keeps it in history; use --set ${oneLineField(key)}=${FROM_STDIN} (stdin) or --set ${oneLineField(key)} (environment)\n`,
      );
    }
    values.set(key, value);
  }
  return ok(values);
}

/** Prompts for each declared credential on a terminal; an empty answer leaves it unchanged. */
async function prompted(ctx: CommandContext, declared: readonly CredentialView[]): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  const s = ctx.out.errStyle;
  for (const d of declared) {
    // The names and hint come from the package: shown as text, never as escape sequences around the hidden prompt.
    ctx.terminal.stderr.write(terminalText(`${s.bold(oneLineField(d.display_name))}${d.setup_hint === '' ? '' : s.dim(` — ${oneLineField(d.setup_hint)}`)}\n`));
    const answer = await ask(ctx.terminal, `  ${oneLineField(d.alias)} (input hidden): `, { hidden: true });
    if (answer !== '') values.set(d.alias, answer);
  }
  return values;
}

/**
 * `setup <name>`: stores credentials (from --set, or prompted on a
 * terminal), then runs the live canary; a pass clears needs_configuration.
 * Values are never printed: output names credentials by alias only.
 */
export function setupCommand(ctx: CommandContext): Promise<ExitCode> {
  const name = ctx.positionals[0] ?? '';
  return withHost(ctx, async (host) => {
    const declared = await declaredCredentials(host, name);
    if (declared.isErr()) return fail(ctx, declared.error, false, name);
    let values: Map<string, string>;
    if (ctx.flags.set.length > 0) {
      const given = await assignments(ctx);
      if (given.isErr()) return fail(ctx, given.error, false, name);
      values = given.value;
    } else if (declared.value.length === 0) {
      values = new Map();
    } else if (ctx.terminal.stdin.isTTY === true && !ctx.out.json) {
      values = await prompted(ctx, declared.value);
    } else {
      return fail(ctx, usageError(`${name} needs credentials: pass --set NAME=- with the value on stdin, or --set NAME to read $NAME (stdin is not a terminal to prompt on)`, 'setup'), false, name);
    }
    const spinner = ctx.out.spinner();
    spinner.update(`storing ${values.size} credential(s) and running the canary of ${name}`);
    const outcome = await host.setup(name, Object.fromEntries(values));
    spinner.stop();
    if (outcome.isErr()) return fail(ctx, outcome.error, false, name, { plugin_id: name, stored: [] });
    const { stored, ...canary } = outcome.value;
    if (!ctx.out.json) {
      const what = stored.length === 0 ? 'no new credentials' : `${stored.length} credential${stored.length === 1 ? '' : 's'} (${stored.join(', ')})`;
      ctx.out.line(`stored ${what} for ${name}`);
      const outside = (await host.info(name)).map((info) => authChecklist({ ...info, auth_components: info.auth_components.filter((c) => c.kind !== 'secret') }));
      for (const line of outside.unwrapOr([])) ctx.out.line(`  to do outside ${PROGRAM}: ${line}`);
    }
    return reportCanary(ctx, canary, 'set up', { stored });
  }, { withoutProfile: failInMissingProfile(ctx, name) });
}
