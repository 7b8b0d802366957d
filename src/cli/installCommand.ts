import { readFile, stat } from 'node:fs/promises';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError, type PluginHost, type TrustRequest } from '../index.js';
import { addedCapabilityText, riskChangeText } from '../installer/trust.js';
import { fail, packageOptions, profileName, withHost, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { canaryJson, canarySummary, statusText, trustLines, trustQuestion } from './present.js';
import { confirm } from './prompt.js';
import { continued, oneLineField } from './style.js';
import { usageFailure } from './usage.js';

/**
 * `install`: validate, pin and publish a plugin in one catalog transaction,
 * then run its declared canary. The plugin becomes callable from the next
 * process that opens the profile (the contract's restart semantics); for a
 * CLI that is simply the next command.
 */
export async function installCommand(ctx: CommandContext): Promise<ExitCode> {
  const source = ctx.positionals[0] ?? '';
  let size = 0;
  // An npm: source names a registry package or a tarball npm itself reads.
  if (!source.startsWith('npm:')) {
    try {
      const info = await stat(source);
      size = info.isFile() ? info.size : 0;
    } catch {
      return usageFailure(ctx, `no such file or directory: ${source}`, 'install');
    }
  }
  return withHost(ctx, (host) => install(ctx, host, source, size), { checkingPackage: true });
}

/** The `--manifest` file, read and parsed as a JSON object. */
async function manifestOption(file: string | undefined): Promise<Result<Readonly<Record<string, unknown>> | undefined, HostError>> {
  if (file === undefined) return ok(undefined);
  try {
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return ok(parsed as Record<string, unknown>);
  } catch (cause) {
    return err(hostError('HOST_INVALID_OPTIONS', `--manifest ${file}: cannot read it as JSON`, { cause, details: { option: 'manifest' } }));
  }
  return err(hostError('HOST_INVALID_OPTIONS', `--manifest ${file}: not a JSON object`, { details: { option: 'manifest' } }));
}

async function install(ctx: CommandContext, host: PluginHost, source: string, archiveBytes: number): Promise<ExitCode> {
  const { out, flags } = ctx;
  const options = await packageOptions(flags);
  if (options.isErr()) return fail(ctx, options.error, true);
  const manifest = await manifestOption(flags.manifestFile);
  if (manifest.isErr()) return fail(ctx, manifest.error, true);
  const spinner = out.spinner();
  spinner.update(archiveBytes > 0 ? `verifying and unpacking ${source} (${Math.ceil(archiveBytes / 1024)} KiB)` : `installing ${source}`);
  const offSpawn = host.events.on('spawn', (e) => spinner.update(`running the canary of ${e.plugin_id}`));
  // On a terminal the person accepts what they install; --yes accepts everything, and a script or --json run accepts by
  // running the command, except an upgrade that makes tools easier to call than before, or gives the plugin powers it did
  // not have that no --grant-* flag names, which the host refuses unasked.
  const asks = !flags.yes && !out.json && ctx.terminal.stdin.isTTY === true;
  const installed = await host.install(source, {
    ...options.value,
    ...(flags.yes ? { accept: () => true } : {}),
    ...(asks
      ? {
          accept: async (request: TrustRequest) => {
            spinner.stop();
            for (const line of trustLines(request, ctx.terminal.stderr.columns)) ctx.terminal.stderr.write(`${line}\n`);
            const added = request.added_capabilities ?? [];
            if (added.length > 0) ctx.terminal.stderr.write(`New powers beyond the version accepted before:\n${added.map((a) => `  ${oneLineField(addedCapabilityText(a))}\n`).join('')}`);
            const changes = request.risk_changes ?? [];
            if (changes.length > 0) ctx.terminal.stderr.write(`Easier to call than the version accepted before:\n${changes.map((c) => `  ${oneLineField(riskChangeText(c))}\n`).join('')}`);
            return confirm(ctx.terminal, trustQuestion(request));
          },
        }
      : {}),
    canary: !flags.skipCanary,
    ...(flags.force ? { replace: true } : {}),
    ...(flags.allowDowngrade ? { allowDowngrade: true } : {}),
    ...(flags.allowSignerChange ? { allowSignerChange: true } : {}),
    ...(flags.grant === undefined ? {} : { grant: flags.grant }),
    ...(flags.settings === undefined ? {} : { settings: flags.settings }),
    ...(flags.args.length === 0 ? {} : { args: flags.args }),
    ...(manifest.value === undefined ? {} : { manifest: manifest.value }),
    ...(flags.bin === undefined ? {} : { bin: flags.bin }),
    ...(flags.pythonIndexUrl === undefined ? {} : { pythonIndexUrl: flags.pythonIndexUrl }),
  });
  offSpawn();
  spinner.stop();
  if (installed.isErr()) return fail(ctx, installed.error, true);

  const { plugin, canary, unchanged } = installed.value;
  const canaryFailed = canary?.status === 'failed';
  out.data({
    ok: !canaryFailed,
    plugin,
    unchanged: unchanged === true,
    canary: canary === undefined ? null : canaryJson(canary),
    activation: 'next-process',
    ...(canaryFailed && canary.error !== undefined ? { error: canary.error.toJSON() } : {}),
  });

  const s = out.style;
  if (unchanged === true) {
    out.line(`${s.green('✓')} ${s.bold(plugin.name)} ${plugin.version} is already installed from the same package; nothing changed`);
    return EXIT_CODES.ok;
  }
  out.line(`${s.green('✓')} installed ${s.bold(plugin.name)} ${plugin.version} ${s.dim(`(${plugin.shape})`)} into profile ${profileName(flags)}`);
  out.line(`  ${s.dim('executable')}  ${plugin.executable.path}  sha256:${plugin.executable.sha256.slice(0, 16)}…`);
  out.line(`  ${s.dim('operations')}  ${plugin.operations.map((o) => o.op_id).join(', ') || '-'}`);
  out.line(`  ${s.dim('owner     ')}  ${plugin.namespace_owner ?? '-'}`);
  // The manifest's own text, on one line each: a line break in it would start lines of the summary's own (`status  active`).
  if (plugin.tos !== null) out.line(`  ${s.dim('terms     ')}  ${oneLineField(plugin.tos)}`);
  if (plugin.risk !== null) out.line(`  ${s.dim('risk      ')}  ${oneLineField(plugin.risk)}`);
  out.line(`  ${s.dim('status    ')}  ${statusText(plugin.status, s)}`);
  if (canary !== undefined) out.line(`  ${s.dim('canary    ')}  ${canarySummary(canary, s)}`);
  if (plugin.status === 'needs_configuration') {
    out.line(`  next: ${PROGRAM} setup ${plugin.name}   (store its credentials)`);
  } else {
    out.line(`  ${plugin.name} is callable from the next ${PROGRAM} process (restart semantics), e.g. ${PROGRAM} run ${plugin.name} <tool> '{...}'`);
  }
  if (canaryFailed && canary.error !== undefined) {
    out.note(`${out.errStyle.yellow('hint')}: ${continued(canary.error.hint, '    ')} (the plugin stays quarantined until '${PROGRAM} reload ${plugin.name}' passes)`);
    return EXIT_CODES.runtime;
  }
  return EXIT_CODES.ok;
}
