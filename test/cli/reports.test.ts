/**
 * validate's reports for CI (issue 17): GitHub workflow annotations, SARIF,
 * a hint and a line on every violation, the tool-list check without --canary
 * and the plugin's stderr when it dies.
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, MANY_VIOLATIONS_MANIFEST, packageHello, REPO, tempDir } from './cliHarness.js';

let work: { readonly path: string; dispose(): Promise<void> };
let badManifest: string;
/** The line of `"<key>":` in the pretty-printed manifest. */
let lineOf: (key: string) => number;

beforeAll(async () => {
  work = await tempDir('mcp-validate-reports-');
  badManifest = join(work.path, 'manifest.json');
  const text = JSON.stringify(MANY_VIOLATIONS_MANIFEST, null, 2);
  await writeFile(badManifest, text);
  lineOf = (key) => text.split('\n').findIndex((l) => l.includes(`"${key}":`)) + 1;
});
afterAll(() => work.dispose());

describe('validate --format github', () => {
  it('writes one ::error annotation per violation with file, line, column, the code and the hint', async () => {
    const run = await cli(['validate', badManifest, '--format', 'github']);
    expect(run.code).toBe(3);
    const annotations = run.stdout.split('\n').filter((l) => l.startsWith('::error '));
    const file = relative(REPO, badManifest);
    const idLine = annotations.find((a) => a.includes('title=PLUGIN_MANIFEST_INVALID at /plugin_id'));
    expect(idLine).toMatch(new RegExp(`^::error file=${file.replace(/[.]/g, '\\.')},line=${lineOf('plugin_id')},col=3,title=`));
    // The hint follows the message on a second (escaped) line of the annotation.
    expect(idLine).toMatch(/::.+%0A\S/);
    expect(annotations.some((a) => a.includes('/declared_capabilities/fs_write_dir') && a.includes(`line=${lineOf('fs_write_dir')},`))).toBe(true);
  });

  it('a command-line problem is an annotation too', async () => {
    const run = await cli(['validate', join(work.path, 'missing.json'), '--format', 'github']);
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/^::error title=HOST_INVALID_OPTIONS::no such file or directory/m);
  });
});

describe('validate --format sarif', () => {
  it('prints a SARIF 2.1.0 log: a rule per code with its hint, a result per violation with its region', async () => {
    const run = await cli(['validate', badManifest, '--format', 'sarif']);
    expect(run.code).toBe(3);
    const log = json(run) as { version: string; runs: Array<{ tool: { driver: { name: string; rules: Array<{ id: string; help?: { text: string } }> } }; results: Array<Record<string, any>> }> };
    expect(log.version).toBe('2.1.0');
    const [only] = log.runs;
    expect(only?.tool.driver.name).toBe('mcp-plugin-host');
    const idResult = only?.results.find((r) => r.locations[0].logicalLocations?.[0]?.fullyQualifiedName === '/plugin_id');
    expect(idResult).toMatchObject({
      ruleId: 'PLUGIN_MANIFEST_INVALID',
      level: 'error',
      locations: [{ physicalLocation: { artifactLocation: { uri: relative(REPO, badManifest) }, region: { startLine: lineOf('plugin_id'), startColumn: 3 } } }],
    });
    const rule = only?.tool.driver.rules[idResult?.ruleIndex as number];
    expect(rule?.id).toBe('PLUGIN_MANIFEST_INVALID');
    expect(rule?.help?.text).toMatch(/\S/);
  });

  it('--json and --format sarif together are a usage error', async () => {
    const run = await cli(['validate', badManifest, '--json', '--format', 'sarif']);
    expect(run.code).toBe(2);
  });

  it('an unknown format names the closest one', async () => {
    const run = await cli(['validate', badManifest, '--format', 'sarf']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("(did you mean 'sarif'?)");
  });
});

describe('validate --json and text: every violation carries a hint and its line', () => {
  it('in --json', async () => {
    const run = await cli(['validate', badManifest, '--json']);
    const violations = json(run).violations as Array<{ pointer: string; hint?: string; line?: number }>;
    expect(violations.length).toBeGreaterThan(3);
    for (const v of violations) expect(v.hint).toMatch(/\S/);
    expect(violations.find((v) => v.pointer === '/plugin_id')?.line).toBe(lineOf('plugin_id'));
  });

  it('in text, the line:column leads each row', async () => {
    const run = await cli(['validate', badManifest, '--no-color']);
    expect(run.stdout).toMatch(new RegExp(`^\\s+${lineOf('plugin_id')}:3\\s+/plugin_id\\s+PLUGIN_MANIFEST_INVALID`, 'm'));
  });
});

describe('plain validate starts the plugin when the sandbox works', () => {
  let hello: string;
  beforeAll(async () => {
    hello = await packageHello();
  }, 60_000);
  afterAll(() => rm(hello, { recursive: true, force: true }));

  async function helloVariant(name: string, change: (manifest: Record<string, any>) => Record<string, any>, executable?: string): Promise<string> {
    const dir = join(work.path, name);
    await cp(hello, dir, { recursive: true });
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Record<string, any>;
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(change(manifest), null, 2));
    if (executable !== undefined) await writeFile(join(dir, 'bin/hello-mcp.mjs'), executable, { mode: 0o755 });
    return dir;
  }

  it('a tool list that differs from the manifest fails without --canary', { timeout: 60_000 }, async () => {
    const dir = await helloVariant('renamed-tool', (m) => ({ ...m, advertised_tools: [{ ...m.advertised_tools[0], name: 'greet' }] }));
    const run = await cli(['validate', dir, '--json']);
    expect(run.code).toBe(1);
    const report = json(run);
    expect(report.checked).toContain('executable binding');
    expect(report).toMatchObject({ ok: false, canary: { status: 'failed', mode: 'passive', error: { code: 'PLUGIN_TOOLS_MISMATCH' } } });
  });

  it('a plugin that dies at start shows its stderr in the text output', { timeout: 60_000 }, async () => {
    const dir = await helloVariant('dies', (m) => m, '#!/usr/bin/env node\nconsole.error("config.yaml: missing api_url");\nprocess.exit(2);\n');
    const run = await cli(['validate', dir, '--no-color']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/canary +failed \(passive\)/);
    expect(run.stderr).toMatch(/plugin stderr \(last lines\):\n {2}config\.yaml: missing api_url/);
  });
});
