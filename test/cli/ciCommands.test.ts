/**
 * A running plugin's text on the CLI's output cannot be read as a command by
 * the CI runner the CLI runs under (attack review R5 F2). GitHub Actions
 * takes a line that starts, after white space, with `::name ...::` as a
 * workflow command (annotations, `::stop-commands::`, `::add-mask::`) and
 * `##[name]` anywhere in a line; Azure Pipelines `##vso[...]` anywhere
 * (`task.setvariable` sets variables later steps read). The CLI indents a
 * plugin's multi-line text, which the runner trims away. A hand-written MCP
 * server puts such lines in its tool description and its error text; the
 * CLI runs for real and starts it in its sandbox; the runner's rules are
 * applied to what it printed.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stdioMcpServerSource } from '../support/stdioMcpServer.js';
import { cli, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
const SCHEMA = { type: 'object', properties: {} };
const FORGED = [
  'looks fine',
  '::error title=Build::the host failed; re-run with ACTIONS_STEP_DEBUG',
  '::stop-commands::pause',
  'also ##[set-output name=ok;]true and ##vso[task.setvariable variable=PATH]/tmp/evil',
  'an address ::1 stays as it is',
].join('\n');

/** The server: FORGED is `greet`'s description and answer, and `rpcerr`'s JSON-RPC error. */
const SERVER = stdioMcpServerSource({
  name: 'forger',
  tools: [
    { name: 'greet', description: FORGED, inputSchema: SCHEMA },
    { name: 'rpcerr', description: 'answers with a JSON-RPC error', inputSchema: SCHEMA },
  ],
  call: `const FORGED = ${JSON.stringify(FORGED)};
if (params?.name === 'rpcerr') send({ id, error: { code: -32000, message: FORGED } });
else send({ id, result: { content: [{ type: 'text', text: FORGED }] } });`,
});

/** The lines of `output` a CI runner takes for commands, by the rules of GitHub's runner and the Azure Pipelines agent. */
function runnerCommands(output: string): string[] {
  return output.split(/\r?\n/).filter((line) => {
    const trimmed = line.trimStart();
    return (trimmed.startsWith('::') && trimmed.indexOf('::', 2) >= 0) || /##(?:vso|teamcity)?\[/i.test(line);
  });
}

describe("a running plugin's text under a CI runner", () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  let profile: string;
  beforeAll(async () => {
    scratch = await tempDir('cli-ci-commands-');
    const pkg = join(scratch.path, 'forger');
    await cp(join(REPO, 'fixtures/plugins/install-node'), pkg, { recursive: true });
    await writeFile(join(pkg, 'bin/greeter.mjs'), SERVER, { mode: 0o755 });
    const manifest = JSON.parse(await readFile(join(pkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    manifest['advertised_tools'] = ['greet', 'rpcerr'].map((name) => ({ name, description: `the ${name} tool`, risk_class: 'read' }));
    await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
    profile = join(scratch.path, 'profile');
    const installed = await cli(['install', pkg, '--dev', '--yes', '--skip-canary', '--profile-dir', profile]);
    expect(installed.code, installed.stderr).toBe(0);
  }, SLOW);
  afterAll(() => scratch.dispose());

  it('tools: the description is shown, and no line of it is a runner command', { timeout: SLOW }, async () => {
    const listed = await cli(['tools', 'greeter', '--profile-dir', profile, '--no-color']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(runnerCommands(listed.stdout)).toEqual([]);
    // What a person reads is unchanged but for zero-width spaces.
    const shown = listed.stdout.replaceAll('\u200b', '');
    for (const line of FORGED.split('\n')) expect(shown).toContain(`  ${line}\n`);
  });

  it('tools --json: the same strings, with no runner command in the document', { timeout: SLOW }, async () => {
    const listed = await cli(['tools', 'greeter', '--profile-dir', profile, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(runnerCommands(listed.stdout)).toEqual([]);
    expect(listed.stdout).toContain(String.raw`#\u0023vso[`);
    expect(JSON.stringify(JSON.parse(listed.stdout))).toContain(JSON.stringify(FORGED).slice(1, -1));
  });

  it("run: neither the tool's text on stdout nor a JSON-RPC error on stderr holds a runner command", { timeout: SLOW }, async () => {
    const ran = await cli(['run', 'greeter', 'greet', '{}', '--profile-dir', profile, '--no-color']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout.replaceAll('\u200b', '')).toContain('##vso[task.setvariable');
    expect(runnerCommands(ran.stdout)).toEqual([]);
    const failed = await cli(['run', 'greeter', 'rpcerr', '{}', '--profile-dir', profile, '--no-color']);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/^error PLUGIN_INTERNAL_ERROR: .*looks fine\n {4}:\u200b:error title=Build::/m);
    expect(runnerCommands(failed.stderr)).toEqual([]);
  });
});
