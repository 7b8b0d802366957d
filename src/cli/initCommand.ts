import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { hostError } from '../errors/HostError.js';
import type { CommandContext } from './context.js';
import { EXIT_CODES, exitCodeFor, type ExitCode } from './exitCodes.js';
import { PROGRAM } from './help.js';
import { usageFailure } from './usage.js';
import { packageRoot, packageVersion } from './version.js';

const PLUGIN_ID = /^[a-z][a-z0-9-]{0,63}$/;

/** Template file names that npm would drop or rename when this package is published. */
const DOT_PREFIX = 'dot-';

/** The SDK range the Node template depends on: the one this host is built and tested with. */
async function sdkRange(root: string): Promise<string> {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string>; dependencies?: Record<string, string> };
  return pkg.peerDependencies?.['@modelcontextprotocol/sdk'] ?? pkg.dependencies?.['@modelcontextprotocol/sdk'] ?? '*';
}

/** Every file under `dir`, as paths relative to it. */
async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const relative = prefix === '' ? entry.name : join(prefix, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, relative)));
    else out.push(relative);
  }
  return out;
}

/**
 * `init <dir>`: a plugin author's repository with the plugin in its own
 * folder (`plugin/`, the only thing the host installs), a test suite on
 * `mcp-plugin-host/testing` and a GitHub Actions workflow. `--template`
 * picks a Node server on the MCP SDK (bundled into `plugin/` by
 * `npm run build`), a Python server on the standard library, or an MCP
 * Bundle. The directory must be new or empty.
 */
export async function initCommand(ctx: CommandContext): Promise<ExitCode> {
  const target = resolve(ctx.positionals[0] ?? '');
  const template = ctx.flags.template ?? 'node';
  const id = ctx.flags.id ?? basename(target).toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^[^a-z]+/, '');
  if (!PLUGIN_ID.test(id)) return usageFailure(ctx, `'${id}' is not a plugin id (a lowercase letter, then lowercase letters, digits or '-'): pass --id`, 'init');
  try {
    if ((await readdir(target)).length > 0) return usageFailure(ctx, `${target} is not empty: init writes into a new or empty directory`, 'init');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') return usageFailure(ctx, `${target} cannot be read as a directory`, 'init');
  }
  const root = packageRoot();
  if (root === undefined) {
    const missing = hostError('HOST_IO_ERROR', `the ${PROGRAM} package files (etc/templates) were not found next to the CLI`);
    ctx.out.failure(missing);
    return exitCodeFor(missing, false);
  }
  const name = id
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
  const values: Readonly<Record<string, string>> = {
    id,
    name,
    owner: `io.example.${id}`,
    hostVersion: packageVersion(),
    sdkRange: await sdkRange(root),
    kindNote: { node: 'built from src/ by npm run build', python: 'a Python server on the standard library', mcpb: 'an MCP Bundle: npx @anthropic-ai/mcpb pack plugin' }[template],
    buildStep: template === 'node' ? '      - run: npm run build\n' : '',
  };
  const fill = (text: string): string => text.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => values[key] ?? whole);
  const written: string[] = [];
  for (const source of [join(root, 'etc/templates/shared'), join(root, 'etc/templates', template)]) {
    for (const file of await filesUnder(source)) {
      const to = join(target, ...file.split('/').map((part) => (part.startsWith(DOT_PREFIX) ? `.${part.slice(DOT_PREFIX.length)}` : part)));
      await mkdir(join(to, '..'), { recursive: true });
      const mode = (await lstat(join(source, file))).mode & 0o777;
      await writeFile(to, fill(await readFile(join(source, file), 'utf8')), { mode });
      written.push(to.slice(target.length + 1));
    }
  }
  written.sort();
  ctx.out.data({ ok: true, directory: target, template, plugin_id: id, files: written });
  ctx.out.line(`${ctx.out.style.green('✓')} ${template} plugin ${id} in ${target}`);
  for (const file of written) ctx.out.line(`  ${file}`);
  ctx.out.line('');
  ctx.out.line(`next: cd ${target} && npm install && npm test`);
  return EXIT_CODES.ok;
}
