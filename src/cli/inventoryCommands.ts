import { profileName, withHost, fail, failNaming, notInMissingProfile, type CommandContext } from './context.js';
import { EXIT_CODES, type ExitCode } from './exitCodes.js';
import { infoLines, statusText } from './present.js';

/** `list`: the inventory, one aligned row per plugin. */
export function listCommand(ctx: CommandContext): Promise<ExitCode> {
  // A profile with no directory has nothing installed: said so, and the directory is not made by looking.
  const withoutProfile = (dir: string): ExitCode => {
    const { out } = ctx;
    out.data({ ok: true, profile: profileName(ctx.flags), profile_dir: dir, profile_exists: false, plugins: [] });
    out.line(`no plugins installed in profile ${profileName(ctx.flags)} ${out.style.dim(`(${dir} does not exist)`)}`);
    return EXIT_CODES.ok;
  };
  return withHost(ctx, async (host) => {
    const listed = await host.list();
    if (listed.isErr()) return fail(ctx, listed.error, false);
    const rows = listed.value;
    const { out } = ctx;
    out.data({ ok: true, profile: profileName(ctx.flags), profile_dir: host.profileDir, plugins: rows });
    if (rows.length === 0) {
      out.line(`no plugins installed in profile ${profileName(ctx.flags)} ${out.style.dim(`(${host.profileDir})`)}`);
      return EXIT_CODES.ok;
    }
    out.table(
      ['NAME', 'VERSION', 'SHAPE', 'STATUS', 'OPS', 'DISPLAY NAME'],
      rows.map((r) => [r.name, r.version, r.shape, r.status, String(r.variant_count), r.display_name]),
      (text, _r, c) => (c === 3 ? statusText(text.trimEnd(), out.style) + text.slice(text.trimEnd().length) : text),
    );
    return EXIT_CODES.ok;
  }, { readsCatalogOnly: true, withoutProfile });
}

/** `info <name>`: everything known about one plugin (credential aliases, never env names or values). */
export function infoCommand(ctx: CommandContext): Promise<ExitCode> {
  const name = ctx.positionals[0] ?? '';
  return withHost(ctx, async (host) => {
    const info = await host.info(name);
    if (info.isErr()) return failNaming(ctx, host, info.error, { pluginId: name });
    ctx.out.data({ ok: true, plugin: info.value });
    for (const line of infoLines(info.value, ctx.out.style)) ctx.out.line(line);
    return EXIT_CODES.ok;
  }, { withoutProfile: (dir) => fail(ctx, notInMissingProfile(ctx.flags, name, dir), false, name) });
}
