import { err, ok, type Result } from 'neverthrow';
import { CatalogStore, type DescribedCredential, type HostError, type PluginHost } from '../index.js';
import { fail, profileName, withHost, type CommandContext } from './context.js';
import type { ExitCode } from './exitCodes.js';
import { reportCanary } from './lifecycleCommands.js';
import { ask } from './prompt.js';
import { usageError } from './usage.js';

/**
 * The credentials a plugin declares, env names included. The inventory
 * (`info`) never shows env names, so setup reads the plugin's descriptor
 * from the profile's catalog through the public CatalogStore.
 */
async function declaredCredentials(host: PluginHost, ctx: CommandContext, name: string): Promise<Result<DescribedCredential[], HostError>> {
  const info = await host.info(name);
  if (info.isErr()) return err(info.error);
  const profile = profileName(ctx.flags);
  const found = await CatalogStore.open({ profileDir: host.profileDir, profile }).andThen((store) => store.lookup({ profile, plugin_id: name }));
  if (found.isErr()) return err(found.error);
  const descriptor = found.value?.descriptor;
  const described = descriptor?.credential_descriptors ?? [];
  return ok(
    (descriptor?.needs_user_creds ?? []).map(
      (env) => described.find((d) => d.env === env) ?? { alias: env, env, kind: 'secret', display_name: env, setup_hint: '' },
    ),
  );
}

/** Resolves `--set NAME=value` / `--set NAME` (value from this process's environment) against the declared credentials. */
function assignments(ctx: CommandContext, name: string, declared: readonly DescribedCredential[]): Result<Map<DescribedCredential, string>, HostError> {
  const values = new Map<DescribedCredential, string>();
  for (const item of ctx.flags.set) {
    const eq = item.indexOf('=');
    const key = eq === -1 ? item : item.slice(0, eq);
    const credential = declared.find((d) => d.env === key || d.alias === key);
    if (credential === undefined) {
      const known = declared.map((d) => `${d.alias} (${d.display_name})`).join(', ') || 'none';
      return err(usageError(`${name} does not declare a credential named '${key}'; it declares: ${known}`, 'setup'));
    }
    const value = eq === -1 ? ctx.terminal.env[key] : item.slice(eq + 1);
    if (value === undefined || value === '') {
      return err(usageError(eq === -1 ? `--set ${key}: the environment variable ${key} is not set` : `--set ${key}= needs a value`, 'setup'));
    }
    values.set(credential, value);
  }
  return ok(values);
}

/** Prompts for each declared credential on a terminal; an empty answer leaves it unchanged. */
async function prompted(ctx: CommandContext, declared: readonly DescribedCredential[]): Promise<Map<DescribedCredential, string>> {
  const values = new Map<DescribedCredential, string>();
  const s = ctx.out.errStyle;
  for (const d of declared) {
    ctx.terminal.stderr.write(`${s.bold(d.display_name)}${d.setup_hint === '' ? '' : s.dim(` — ${d.setup_hint}`)}\n`);
    const answer = await ask(ctx.terminal, `  ${d.alias} (input hidden): `, { hidden: true });
    if (answer !== '') values.set(d, answer);
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
    const declared = await declaredCredentials(host, ctx, name);
    if (declared.isErr()) return fail(ctx, declared.error, false, name);
    let values: Map<DescribedCredential, string>;
    if (ctx.flags.set.length > 0) {
      const given = assignments(ctx, name, declared.value);
      if (given.isErr()) return fail(ctx, given.error, false, name);
      values = given.value;
    } else if (declared.value.length === 0) {
      values = new Map();
    } else if (ctx.terminal.stdin.isTTY === true && !ctx.out.json) {
      values = await prompted(ctx, declared.value);
    } else {
      return fail(ctx, usageError(`${name} needs credentials: pass --set NAME=value (stdin is not a terminal to prompt on)`, 'setup'), false, name);
    }
    const stored = [...values.keys()].map((d) => d.alias);
    const spinner = ctx.out.spinner();
    spinner.update(`storing ${stored.length} credential(s) and running the canary of ${name}`);
    const outcome = await host.setup(name, Object.fromEntries([...values].map(([d, v]) => [d.env, v])));
    spinner.stop();
    if (outcome.isErr()) return fail(ctx, outcome.error, false, name, { plugin_id: name, stored: [] });
    if (!ctx.out.json) {
      const what = stored.length === 0 ? 'no new credentials' : `${stored.length} credential${stored.length === 1 ? '' : 's'} (${stored.join(', ')})`;
      ctx.out.line(`stored ${what} for ${name}`);
    }
    return reportCanary(ctx, outcome.value, 'set up', { stored });
  });
}
