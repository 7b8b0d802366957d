/**
 * Published npm servers of the fourth round of docs/published-servers.md
 * ("Servers tried"), installed from the registry as their authors ship them
 * (`npm:<name>@<version>`, no manifest, the README's arguments) under the
 * host default sandbox: no network, only the data directory writable.
 *
 * - @eslint/mcp: a server that reads its configuration where the files it is
 *   given live (ESLint's flat config, looked up from each file's directory),
 *   not from its own working directory: pointed at a project in its data
 *   directory it lints with that project's rules, offline;
 * - @bytebase/dbhub: a server whose package asks for a newer Node
 *   (`engines.node` `>=22.5.0`, for `node:sqlite`) than the one it runs on
 *   here: its failed introspection names the range and the Node, and quotes
 *   the error its stack trace buried.
 *
 * The versions are pinned: a newer release may change its tools.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool, textOf } from '../support/hostHarness.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

// npm fetches a tree of hundreds of packages from the registry: dbhub's took 72 s at a load of 15 on 2 cores.
describe('published servers, fourth round', { timeout: 300_000 }, () => {
  it('@eslint/mcp@0.3.13: lints a file of a project in its data directory with that project\'s config', async () => {
    const dir = await pool.profile();
    const installer = await pool.open(dir, { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const installed = (await installer.install('npm:@eslint/mcp@0.3.13', { canary: false }))._unsafeUnwrap();
    await installer.close();
    expect(installed.plugin.name).toBe('eslint-mcp');
    expect(installed.plugin.operations.map((o) => [o.tool_name, o.risk_class])).toEqual([['lint-files', 'destructive']]);
    const host = await pool.open(dir, { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const info = (await host.info(installed.plugin.name))._unsafeUnwrap();
    const dataDir = info.enforced_capabilities?.writablePaths[0];
    expect(dataDir).toBeDefined();
    const project = join(String(dataDir), 'project');
    await mkdir(project, { recursive: true });
    await writeFile(join(project, 'eslint.config.js'), 'export default [{ rules: { "no-unused-vars": "error" } }];\n');
    await writeFile(join(project, 'a.js'), 'const unused = 1;\n');
    const linted = (await host.call(`plug.${installed.plugin.name}.lint-files`, { filePaths: [join(project, 'a.js')] }, { maxRisk: 'destructive' }))._unsafeUnwrap();
    // Its answer is three text items: a preamble, one JSON report per file, an instruction.
    expect(textOf(linted)).toMatch(/^Here are the results of running ESLint/);
    const report = JSON.stringify(linted.value);
    expect(report).toContain('\\"ruleId\\":\\"no-unused-vars\\"');
    expect(report).toContain("'unused' is assigned a value but never used.");
  });

  it('@bytebase/dbhub@1.4.0 (--transport stdio --demo): engines.node >=22.5.0 named when it dies on this Node', async () => {
    const host = await pool.open(await pool.profile(), { profileKind: 'standard', interpreterSearchPath: '/usr/bin:/bin' });
    const error = (await host.install('npm:@bytebase/dbhub@1.4.0', { canary: false, args: ['--transport', 'stdio', '--demo'] }))._unsafeUnwrapErr();
    expect(error).toMatchObject({ code: 'PLUGIN_HANDSHAKE_FAILED', details: { reason: 'introspection', exit: 'exited with status 1', engines: { node: '>=22.5.0', interpreter: '/usr/bin/node' } } });
    expect(error.message).toContain('its stderr says: ');
    expect(error.message).toContain('No such built-in module: node:sqlite');
    expect(error.hint).toMatch(/^The package declares engines\.node ">=22\.5\.0" and its server ran on Node 20\./);
  });
});
