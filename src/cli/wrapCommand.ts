import type { TrustRequest, WrapOptions } from '../index.js';
import { withHost, fail, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { trustLines } from './present.js';
import { confirm } from './prompt.js';
import { ciCommandSafe, terminalSafe } from './style.js';
import { usageFailure } from './usage.js';

/**
 * `wrap npm:<spec>`: prints the manifest the npm server would be installed
 * with. A generated one (the package ships none) goes to stdout as it would
 * be written, so `wrap … > manifest.json` gives a file to review and pass to
 * `install --manifest`; the review note goes to stderr.
 */
export async function wrapCommand(ctx: CommandContext): Promise<ExitCode> {
  const source = ctx.positionals[0] ?? '';
  if (!source.startsWith('npm:')) return usageFailure(ctx, `wrap takes an npm:<name>@<version> or npm:<file>.tgz source, not '${source}'`, 'wrap');
  return withHost(ctx, async (host) => {
    const spinner = ctx.out.spinner();
    spinner.update(`fetching ${source} and reading its tool list in the sandbox`);
    const grant = ctx.flags.grant;
    // On a terminal the person accepts the start with network as install asks it; --yes, scripts and --json accept by running the command.
    const asks = !ctx.flags.yes && !ctx.out.json && ctx.terminal.stdin.isTTY === true;
    const options: WrapOptions = {
      ...(ctx.flags.args.length === 0 ? {} : { args: ctx.flags.args }),
      ...(ctx.flags.bin === undefined ? {} : { bin: ctx.flags.bin }),
      ...(grant?.client_requests === undefined ? {} : { clientRequests: grant.client_requests }),
      ...(grant?.env_allow === undefined ? {} : { env: grant.env_allow }),
      ...(grant?.network === true ? { network: true } : {}),
      ...(grant?.egress === undefined ? {} : { egress: grant.egress }),
      ...(asks
        ? {
            accept: async (request: TrustRequest) => {
              spinner.stop();
              for (const line of trustLines(request, ctx.terminal.stderr.columns)) ctx.terminal.stderr.write(`${line}\n`);
              return confirm(ctx.terminal, `Start ${request.plugin_id} once with this network to list its tools?`);
            },
          }
        : {}),
    };
    const wrapped = await host.wrap(source, options);
    spinner.stop();
    if (wrapped.isErr()) return fail(ctx, wrapped.error, true);
    const { manifestText, needs_review: needsReview, origin, manifestFile } = wrapped.value;
    ctx.out.data({ ok: true, source: wrapped.value.source, origin, needs_review: needsReview, manifest_file: manifestFile, manifest: manifestText });
    // The package's own manifest text may hold C1 controls (JSON and TOML strings allow them): shown for review as text.
    if (!ctx.out.json) ctx.terminal.stdout.write(ciCommandSafe(terminalSafe(manifestText.endsWith('\n') ? manifestText : `${manifestText}\n`)));
    if (needsReview) {
      ctx.out.note(`needs review: generated from the server's own tool list; check every risk_class, then ${PROGRAM} install ${source} --manifest <file>`);
    } else {
      ctx.out.note(`the package ships this manifest (${manifestFile}); ${PROGRAM} install ${source} uses it as it is`);
    }
    return EXIT_CODES.ok;
  }, { checkingPackage: true });
}
