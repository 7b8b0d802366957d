/**
 * The CLI as it ships: built with tsup (the same settings the package build
 * uses for its `bin` entry) into a temp directory, then executed directly
 * through its `#!/usr/bin/env node` line. Also checks that the CLI is made
 * only of the public API.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'tsup';
import { packageBuilds } from '../../tsup.config.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, packageHello, REPO, runProcess, tempDir } from './cliHarness.js';

const SLOW = 180_000;

describe('the built binary', () => {
  let out: Awaited<ReturnType<typeof tempDir>>;
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  let bin: string;

  beforeAll(async () => {
    out = await tempDir('cli-dist-');
    profile = await tempDir('cli-dist-profile-');
    hello = await packageHello();
    await build({
      entry: { cli: join(REPO, 'src/cli/main.ts'), nodeMainGuard: join(REPO, 'src/binding/nodeMainGuard.cjs') },
      format: ['esm', 'cjs'],
      outDir: out.path,
      platform: 'node',
      target: 'node20',
      shims: true,
      noExternal: ['canonicalize'],
      dts: false,
      sourcemap: false,
      clean: false,
      silent: true,
      config: false,
    });
    // The output imports its dependencies by name, as dist/ does next to
    // node_modules, and is ESM by its package.json, as the package's is.
    await symlink(join(REPO, 'node_modules'), join(out.path, 'node_modules'), 'dir');
    await writeFile(join(out.path, 'package.json'), JSON.stringify({ type: 'module' }));
    bin = join(out.path, 'cli.js');
  }, SLOW);
  afterAll(async () => {
    await out.dispose();
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
  });

  it('ships the Node main-module guard next to the built modules, where verification looks for it', () => {
    expect(existsSync(join(out.path, 'nodeMainGuard.cjs'))).toBe(true);
  });

  it('is an executable with a node shebang', { timeout: SLOW }, async () => {
    expect((await readFile(bin, 'utf8')).startsWith('#!/usr/bin/env node\n')).toBe(true);
    const run = await runProcess(bin, ['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^mcp-plugin-host — /);
  });

  it('exits quietly when the reader of its output goes away (`mcp-plugin-host --help | head -0`)', { timeout: SLOW }, async () => {
    const child = spawn(bin, ['--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'close')) as [number | null];
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(code).toBe(0);
  });

  it('also builds and runs as CommonJS (no top-level await)', { timeout: SLOW }, async () => {
    const run = await runProcess(process.execPath, [join(out.path, 'cli.cjs'), 'list', '--json', '--profile-dir', profile.path]);
    expect(run.code).toBe(0);
    expect(json(run)).toMatchObject({ ok: true, plugins: [] });
  });

  it('validates, installs and runs a plugin end to end', { timeout: SLOW }, async () => {
    const args = (...a: string[]): string[] => [...a, '--profile-dir', profile.path];
    const validated = await runProcess(bin, ['validate', hello, '--json']);
    expect(validated.code).toBe(0);
    expect(json(validated)).toMatchObject({ ok: true, violations: [] });

    const installed = await runProcess(bin, args('install', hello, '--dev'));
    expect(installed.code).toBe(0);
    expect(installed.stdout).toContain('installed hello 0.1.0');

    const called = await runProcess(bin, args('run', 'hello', 'hello', '{"name":"dist"}'));
    expect(called.code).toBe(0);
    expect(called.stdout).toBe('{"success":true,"data":{"greeting":"Hello, dist!"}}\n');

    const refused = await runProcess(bin, args('run', 'hello', 'hello', '{"name":""}'));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error INVALID_ARGS: name must be a non-empty string$/m);
    expect(refused.stderr).toMatch(/^hint: /m);
  });
});

/** The bare package names a built module and the chunks it imports statically load, with every chunk reached. */
async function staticImports(dir: string, file: string): Promise<{ packages: Set<string>; chunks: Set<string> }> {
  const packages = new Set<string>();
  const chunks = new Set<string>([file]);
  const pending = [file];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const text = await readFile(join(dir, next), 'utf8');
    for (const [, specifier] of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gms)) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('./')) {
        const chunk = specifier.slice(2);
        if (!chunks.has(chunk)) {
          chunks.add(chunk);
          pending.push(chunk);
        }
      } else packages.add(specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/'));
    }
  }
  return { packages, chunks };
}

describe('the CLI as the package builds it loads only what a command needs', () => {
  let out: Awaited<ReturnType<typeof tempDir>>;
  beforeAll(async () => {
    out = await tempDir('cli-chunks-');
    const esm = packageBuilds({ dts: false }).find((b) => typeof b.entry === 'object' && !Array.isArray(b.entry) && 'cli' in b.entry);
    if (esm === undefined) throw new Error('tsup.config.ts has no build with a cli entry');
    const entry = Object.fromEntries(Object.entries(esm.entry as Record<string, string>).map(([name, path]) => [name, join(REPO, path)]));
    await build({ ...esm, entry, outDir: out.path, clean: false, dts: false, sourcemap: false, silent: true, config: false });
  }, SLOW);
  afterAll(() => out.dispose());

  const RUN_TIME = ['@modelcontextprotocol/sdk', 'tar', 'yauzl', 'zod'];

  it('the entry (--version, --help, usage errors) imports none of the library\'s run-time code', async () => {
    const { packages } = await staticImports(out.path, 'cli.js');
    expect([...packages].filter((p) => RUN_TIME.includes(p) || p === 'ajv')).toEqual([]);
  });

  it('validate of a lone manifest loads the manifest checks but no MCP SDK, archive reader or sandbox', async () => {
    const validate = (await readdir(out.path)).find((f) => /^validateCommand-[\w-]+\.js$/.test(f));
    expect(validate).toBeDefined();
    const { packages } = await staticImports(out.path, validate ?? '');
    expect(packages.has('ajv')).toBe(true);
    expect([...packages].filter((p) => RUN_TIME.includes(p))).toEqual([]);
  });
});

describe('the CLI is built from the public API only', () => {
  it('imports nothing but the barrel or a module the barrel re-exports from, its own files, etc/ data, node built-ins and neverthrow', async () => {
    // A module the barrel re-exports from may be named directly: the bundler then leaves the rest of the library
    // out of the chunks a command loads (through the barrel every command would load all of it).
    const barrel = await readFile(join(REPO, 'src/index.ts'), 'utf8');
    const publicModules = new Set([...barrel.matchAll(/\bfrom\s+'\.\/([^']+)'/g)].map(([, path]) => `../${path ?? ''}`));
    const dir = join(REPO, 'src/cli');
    const files = (await readdir(dir)).filter((f) => f.endsWith('.ts'));
    expect(files).toContain('main.ts');
    const offending: string[] = [];
    for (const file of files) {
      const text = await readFile(join(dir, file), 'utf8');
      for (const [, specifier] of text.matchAll(/\bfrom\s+'([^']+)'/g)) {
        const allowed =
          specifier === '../index.js' ||
          publicModules.has(specifier ?? '') ||
          specifier === 'neverthrow' ||
          // The package's own data files (etc/ ships with it), such as the examples help prints.
          /^\.\.\/\.\.\/etc\/[\w-]+\.json$/.test(specifier ?? '') ||
          specifier?.startsWith('node:') ||
          /^\.\/[A-Za-z]+\.js$/.test(specifier ?? '');
        if (!allowed) offending.push(`${file}: ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });
});

describe('a rebuild of the package', () => {
  it('leaves the sandbox launcher in place: a host starting a plugin meanwhile must not fall back to bubblewrap', { timeout: SLOW }, async () => {
    const out = await tempDir('cli-rebuild-');
    const source = await tempDir('cli-rebuild-source-');
    try {
      const launcher = join(out.path, 'mcp-plugin-launcher');
      await writeFile(launcher, 'built earlier');
      const entry = join(source.path, 'probe.ts');
      await writeFile(entry, 'export const probe = 1;\n');
      for (const options of packageBuilds()) {
        // Each build's own clean runs first; the entry and the declarations do not matter to what it removes.
        await build({ ...options, entry: { probe: entry }, dts: false, outDir: out.path, silent: true, config: false });
        expect(existsSync(launcher)).toBe(true);
      }
    } finally {
      await out.dispose();
      await source.dispose();
    }
  });
});
