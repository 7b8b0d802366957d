import type { ResultAsync } from 'neverthrow';
import { hostError } from '../errors/HostError.js';
import { PreferredSecretStore, type CanaryOutcome, type HostError, type PluginHost } from '../index.js';
import hostOptionData from '../../etc/host-options.json' with { type: 'json' };
import { fail, failInMissingProfile, failNaming, profileName, withHost, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { canaryJson, canarySummary } from './present.js';
import { continued } from './style.js';
import { confirm } from './prompt.js';

function nameOf(ctx: CommandContext): string {
  return ctx.positionals[0] ?? '';
}

/**
 * `remove <name>`: install root and rows go; the namespace owner, data
 * directory and credentials stay (`--forget-secrets` deletes the
 * credentials, also of a plugin removed before). On a terminal it asks first (`--yes` does not); elsewhere
 * (scripts, CI, `--json`) it removes at once.
 */
export function removeCommand(ctx: CommandContext): Promise<ExitCode> {
  const name = nameOf(ctx);
  const { out, terminal, flags } = ctx;
  return withHost(ctx, async (host) => {
    const found = await host.info(name);
    if (found.isErr() && found.error.code === 'PLUGIN_NOT_FOUND' && flags.forgetSecrets) return forgetOnly(ctx, host, name);
    if (found.isErr()) return failNaming(ctx, host, found.error, { pluginId: name });
    if (!flags.yes && !out.json && terminal.stdin.isTTY === true) {
      const { version } = found.value;
      const kept = flags.forgetSecrets ? 'Its stored credentials are deleted; its data directory is kept.' : 'Its data directory and credentials are kept.';
      if (!(await confirm(terminal, `Remove ${name} ${version}? ${kept}`))) {
        return fail(ctx, hostError('PLUGIN_CONFIRMATION_DENIED', `${name} was not removed`, { details: { plugin_id: name } }), false, name);
      }
    }
    const removed = await host.remove(name, { forgetSecrets: flags.forgetSecrets });
    if (removed.isErr()) return failNaming(ctx, host, removed.error, { pluginId: name });
    ctx.out.data({ ok: true, plugin_id: name, removed: true, credentials_deleted: flags.forgetSecrets });
    ctx.out.line(`removed ${name} ${ctx.out.style.dim('(its namespace owner stays recorded, so the same owner can reinstall it)')}`);
    return EXIT_CODES.ok;
  }, { withoutProfile: (dir) => (flags.forgetSecrets ? forgetInMissingProfile(ctx, name, dir) : failInMissingProfile(ctx, name)(dir)) });
}

/**
 * `remove <name> --forget-secrets` of a plugin not installed (a plain remove
 * keeps credentials): deletes what is stored under the id, so forgetting
 * needs no reinstall. On a terminal it asks first, as a remove does.
 */
async function forgetOnly(ctx: CommandContext, host: PluginHost, name: string): Promise<ExitCode> {
  const { out, terminal, flags } = ctx;
  if (!flags.yes && !out.json && terminal.stdin.isTTY === true) {
    if (!(await confirm(terminal, `${name} is not installed. Delete the credentials stored for it?`))) {
      return fail(ctx, hostError('PLUGIN_CONFIRMATION_DENIED', `the credentials of ${name} were not deleted`, { details: { plugin_id: name } }), false, name);
    }
  }
  const forgotten = await host.remove(name, { forgetSecrets: true });
  if (forgotten.isErr()) return failNaming(ctx, host, forgotten.error, { pluginId: name });
  out.data({ ok: true, plugin_id: name, removed: false, credentials_deleted: true });
  out.line(`${name} is not installed; deleted the credentials stored for it`);
  return EXIT_CODES.ok;
}

/**
 * `remove <name> --forget-secrets` in a profile whose directory does not
 * exist: the OS keychain may still hold values filed under that directory
 * (the directory was deleted by hand), so they are deleted there, through
 * the store a host would use, without making the directory (a mistyped
 * --profile must not leave one behind). The file store lived in the
 * directory: nothing of it is left.
 */
async function forgetInMissingProfile(ctx: CommandContext, name: string, dir: string): Promise<ExitCode> {
  const { out, terminal, flags } = ctx;
  if (!flags.yes && !out.json && terminal.stdin.isTTY === true) {
    if (!(await confirm(terminal, `${name} is not installed (profile ${profileName(flags)} has no directory). Delete the credentials stored for it?`))) {
      return fail(ctx, hostError('PLUGIN_CONFIRMATION_DENIED', `the credentials of ${name} were not deleted`, { details: { plugin_id: name } }), false, name);
    }
  }
  const store = new PreferredSecretStore({ profileDir: dir, appName: flags.appName ?? hostOptionData.defaults.appName, env: terminal.env });
  const forgotten = await store.delete(name);
  if (forgotten.isErr()) return fail(ctx, forgotten.error, false, name);
  out.data({ ok: true, plugin_id: name, removed: false, credentials_deleted: true, profile_dir: dir, profile_exists: false });
  out.line(`${name} is not installed; deleted the credentials stored for it ${out.style.dim(`(${dir} does not exist)`)}`);
  return EXIT_CODES.ok;
}

/** `unquarantine <name>`: clears quarantine, starts nothing. */
export function unquarantineCommand(ctx: CommandContext): Promise<ExitCode> {
  const name = nameOf(ctx);
  return withHost(ctx, async (host) => {
    const cleared = await host.unquarantine(name);
    if (cleared.isErr()) return failNaming(ctx, host, cleared.error, { pluginId: name });
    ctx.out.data({ ok: true, plugin_id: name, quarantined: false });
    ctx.out.line(`unquarantined ${name}`);
    return EXIT_CODES.ok;
  }, { withoutProfile: failInMissingProfile(ctx, name) });
}

/** `quarantine <name>`: quarantines the plugin for good; every host on the profile stops it. */
export function quarantineCommand(ctx: CommandContext): Promise<ExitCode> {
  const name = nameOf(ctx);
  return withHost(ctx, async (host) => {
    const quarantined = await host.quarantine(name);
    if (quarantined.isErr()) return failNaming(ctx, host, quarantined.error, { pluginId: name });
    ctx.out.data({ ok: true, plugin_id: name, quarantined: true });
    ctx.out.line(`quarantined ${name} ${ctx.out.style.dim(`(until '${PROGRAM} unquarantine ${name}' or '${PROGRAM} reload ${name}')`)}`);
    return EXIT_CODES.ok;
  }, { withoutProfile: failInMissingProfile(ctx, name) });
}

/**
 * Prints a canary outcome as the command's result: exit 0 only when it
 * passed. A skipped canary (credentials missing) did not prove anything, so
 * it is not a success when a canary was what the user asked for.
 */
export function reportCanary(ctx: CommandContext, outcome: CanaryOutcome, verb: string, extra: Readonly<Record<string, unknown>> = {}): ExitCode {
  const { out } = ctx;
  const passed = outcome.status === 'passed';
  out.data({ ok: passed, plugin_id: outcome.plugin_id, ...extra, canary: canaryJson(outcome), ...(outcome.error === undefined ? {} : { error: outcome.error.toJSON() }) });
  const s = out.style;
  out.line(`${passed ? s.green('✓') : s.red('✗')} ${verb} ${outcome.plugin_id}: canary ${canarySummary(outcome, s)}`);
  if (outcome.error !== undefined) {
    out.note(`${out.errStyle.yellow('hint')}: ${continued(outcome.error.hint, '    ')}`);
    if (outcome.status === 'skipped') out.note(`${out.errStyle.yellow('try')}: ${PROGRAM} setup ${outcome.plugin_id}`);
    else out.note(`${out.errStyle.yellow('try')}: fix the cause, then ${PROGRAM} reload ${outcome.plugin_id}`);
  }
  return passed ? EXIT_CODES.ok : EXIT_CODES.runtime;
}

function canaryRun(ctx: CommandContext, verb: string, run: (host: PluginHost, name: string) => ResultAsync<CanaryOutcome, HostError>): Promise<ExitCode> {
  const name = nameOf(ctx);
  return withHost(ctx, async (host) => {
    const spinner = ctx.out.spinner();
    spinner.update(`${verb} ${name}`);
    const outcome = await run(host, name);
    spinner.stop();
    if (outcome.isErr()) return failNaming(ctx, host, outcome.error, { pluginId: name });
    // What the canary tool answered, so a live run with overridden arguments can be read back.
    const answer = verb === 'checking' && outcome.value.result !== undefined ? { result: outcome.value.result } : undefined;
    return reportCanary(ctx, outcome.value, verb === 'reloading' ? 'reloaded' : 'canary', answer);
  }, { withoutProfile: failInMissingProfile(ctx, name) });
}

/** `reload <name>`: clear quarantine, restart, passive canary. */
export function reloadCommand(ctx: CommandContext): Promise<ExitCode> {
  return canaryRun(ctx, 'reloading', (host, name) => host.reload(name));
}

/** `canary <name> [--live] [--canary-args k=v ...]`. */
export function canaryCommand(ctx: CommandContext): Promise<ExitCode> {
  const { live, canaryArgs } = ctx.flags;
  return canaryRun(ctx, 'checking', (host, name) => host.canary(name, { live: live || canaryArgs !== undefined, ...(canaryArgs === undefined ? {} : { args: canaryArgs }) }));
}
