import { err, ok, type Result } from 'neverthrow';
import type { CredentialView, HostError, PluginHost } from '../index.js';
import { fail, withHost, type CommandContext } from './context.js';
import type { ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { reportCanary } from './lifecycleCommands.js';
import { authChecklist } from './present.js';
import { ask } from './prompt.js';
import { oneLineField } from './style.js';
import { usageError } from './usage.js';

/** The credentials a plugin declares, as the inventory shows them: by alias, never by env name. */
async function declaredCredentials(host: PluginHost, name: string): Promise<Result<readonly CredentialView[], HostError>> {
  return (await host.info(name)).map((info) => info.credential_descriptors);
}

/**
 * Resolves `--set KEY=value` / `--set KEY` (value from this process's
 * environment). KEY is a credential's alias or its env name; the host
 * refuses keys the plugin does not declare.
 */
function assignments(ctx: CommandContext): Result<Map<string, string>, HostError> {
  const values = new Map<string, string>();
  for (const item of ctx.flags.set) {
    const eq = item.indexOf('=');
    const key = eq === -1 ? item : item.slice(0, eq);
    const value = eq === -1 ? ctx.terminal.env[key] : item.slice(eq + 1);
    if (value === undefined || value === '') {
      return err(usageError(eq === -1 ? `--set ${key}: the environment variable ${key} is not set` : `--set ${key}= needs a value`, 'setup'));
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
    ctx.terminal.stderr.write(`${s.bold(oneLineField(d.display_name))}${d.setup_hint === '' ? '' : s.dim(` — ${oneLineField(d.setup_hint)}`)}\n`);
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
      const given = assignments(ctx);
      if (given.isErr()) return fail(ctx, given.error, false, name);
      values = given.value;
    } else if (declared.value.length === 0) {
      values = new Map();
    } else if (ctx.terminal.stdin.isTTY === true && !ctx.out.json) {
      values = await prompted(ctx, declared.value);
    } else {
      return fail(ctx, usageError(`${name} needs credentials: pass --set NAME=value (stdin is not a terminal to prompt on)`, 'setup'), false, name);
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
  });
}
