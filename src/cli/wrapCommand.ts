import { withHost, fail, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { terminalSafe } from './style.js';
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
    const clientRequests = ctx.flags.grant?.client_requests;
    const env = ctx.flags.grant?.env_allow;
    const wrapped = await host.wrap(source, {
      ...(ctx.flags.args.length === 0 ? {} : { args: ctx.flags.args }),
      ...(clientRequests === undefined ? {} : { clientRequests }),
      ...(env === undefined ? {} : { env }),
    });
    spinner.stop();
    if (wrapped.isErr()) return fail(ctx, wrapped.error, true);
    const { manifestText, needs_review: needsReview, origin, manifestFile } = wrapped.value;
    ctx.out.data({ ok: true, source: wrapped.value.source, origin, needs_review: needsReview, manifest_file: manifestFile, manifest: manifestText });
    // The package's own manifest text may hold C1 controls (JSON and TOML strings allow them): shown for review as text.
    if (!ctx.out.json) ctx.terminal.stdout.write(terminalSafe(manifestText.endsWith('\n') ? manifestText : `${manifestText}\n`));
    if (needsReview) {
      ctx.out.note(`needs review: generated from the server's own tool list; check every risk_class, then ${PROGRAM} install ${source} --manifest <file>`);
    } else {
      ctx.out.note(`the package ships this manifest (${manifestFile}); ${PROGRAM} install ${source} uses it as it is`);
    }
    return EXIT_CODES.ok;
  }, { checkingPackage: true });
}
