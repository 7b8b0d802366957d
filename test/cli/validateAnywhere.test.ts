import { cp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validatePluginDir } from '../../src/testing/index.js';
import { cli, json, REPO, tempDir } from './cliHarness.js';

const HELLO = join(REPO, 'fixtures/plugins/hello');

let work: { readonly path: string; dispose(): Promise<void> };
/** A PATH holding node and nothing else: no bwrap, so the sandbox cannot be created (the commands force bubblewrap, so the Landlock launcher is not tried). */
let noSandbox: Readonly<Record<string, string>>;

beforeAll(async () => {
  work = await tempDir('mcp-validate-anywhere-');
  const bin = join(work.path, 'bin');
  await mkdir(bin);
  await symlink(process.execPath, join(bin, 'node'));
  noSandbox = { PATH: bin };
});
afterAll(() => work.dispose());

describe('validate where no OS sandbox can be created', () => {
  it('a lone manifest passes every static check, exit 0', async () => {
    const run = await cli(['validate', '--sandbox', 'bubblewrap', join(HELLO, 'manifest.json'), '--json'], { env: noSandbox });
    expect(run.code).toBe(0);
    expect(json(run)).toMatchObject({ ok: true, skipped: [] });
  });

  it('a directory: static checks run, the sandboxed ones are skipped with the reason, exit 5', async () => {
    const run = await cli(['validate', '--sandbox', 'bubblewrap', HELLO, '--json'], { env: noSandbox });
    expect(run.code).toBe(5);
    const report = json(run);
    expect(report).toMatchObject({ ok: true, plugin: { plugin_id: 'hello' }, violations: [] });
    expect(report.skipped).toEqual(
      ['executable binding', 'tool list'].map((check) => ({ check, code: 'PLUGIN_SANDBOX_UNSUPPORTED', reason: expect.stringContaining('bubblewrap') })),
    );
    const text = await cli(['validate', '--sandbox', 'bubblewrap', HELLO], { env: noSandbox });
    expect(text.code).toBe(5);
    expect(text.stdout).toMatch(/skipped\s+executable binding, tool list: PLUGIN_SANDBOX_UNSUPPORTED/);
  });

  it('--strict makes the skipped checks fail: PLUGIN_SANDBOX_UNSUPPORTED, exit 4', async () => {
    const run = await cli(['validate', '--sandbox', 'bubblewrap', HELLO, '--strict', '--json'], { env: noSandbox });
    expect(run.code).toBe(4);
    expect(json(run)).toMatchObject({ ok: false, error: { code: 'PLUGIN_SANDBOX_UNSUPPORTED' } });
  });

  it('violations are still found and exit 3', async () => {
    const pkg = join(work.path, 'bad-id');
    await cp(HELLO, pkg, { recursive: true });
    const manifest = JSON.parse(await readFile(join(pkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(pkg, 'manifest.json'), JSON.stringify({ ...manifest, plugin_id: 'Not_An_Id' }));
    const run = await cli(['validate', '--sandbox', 'bubblewrap', pkg, '--json'], { env: noSandbox });
    expect(run.code).toBe(3);
    expect(json(run)).toMatchObject({ ok: false, violations: [{ pointer: '/plugin_id' }], skipped: [] });
  });
});

describe('validate a package whose executable is missing', () => {
  it.each([
    ['with the sandbox', {}],
    ['without a sandbox', undefined],
  ])('%s: PLUGIN_EXECUTABLE_UNTRUSTED at /executable, exit 3, no scratch path', async (_label, env) => {
    const pkg = join(work.path, `no-executable-${env === undefined ? 'bare' : 'sandboxed'}`);
    await cp(HELLO, pkg, { recursive: true });
    await rm(join(pkg, 'bin'), { recursive: true });
    const run = await cli(['validate', '--sandbox', 'bubblewrap', pkg, '--json'], { env: env ?? noSandbox });
    expect(run.code).toBe(3);
    const report = json(run);
    expect(report.violations).toEqual([
      {
        pointer: '/executable',
        code: 'PLUGIN_EXECUTABLE_UNTRUSTED',
        message: "executable 'bin/hello-mcp.mjs' is not in the package",
        stage: 'executable_binding',
        hint: expect.stringMatching(/\S/),
        line: expect.any(Number),
        column: expect.any(Number),
      },
    ]);
    expect(run.stdout).not.toContain('mcp-plugin-host-validate-');
  });
});

describe('validatePluginDir where no OS sandbox can be created', () => {
  const noBwrap = { backend: 'bubblewrap', bwrapPath: '/nonexistent/bwrap' } as const;

  it('runs the static checks and lists the install as skipped; strict refuses instead', async () => {
    const report = (await validatePluginDir(HELLO, { sandbox: noBwrap }))._unsafeUnwrap();
    expect(report).toMatchObject({ ok: true, pluginId: 'hello', violations: [] });
    expect(report.skipped).toEqual([{ check: 'install', code: 'PLUGIN_SANDBOX_UNSUPPORTED', reason: expect.stringContaining('bubblewrap') }]);
    const refused = await validatePluginDir(HELLO, { sandbox: noBwrap, strict: true });
    expect(refused._unsafeUnwrapErr().code).toBe('PLUGIN_SANDBOX_UNSUPPORTED');
  });

  it('still reports a missing executable at /executable', async () => {
    const pkg = join(work.path, 'kit-no-executable');
    await cp(HELLO, pkg, { recursive: true });
    await rm(join(pkg, 'bin'), { recursive: true });
    const report = (await validatePluginDir(pkg, { sandbox: noBwrap }))._unsafeUnwrap();
    expect(report.violations).toEqual([{ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', pointer: '/executable', message: "executable 'bin/hello-mcp.mjs' is not in the package", stage: 'install' }]);
  });
});
