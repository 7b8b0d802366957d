import { describe, expect, it } from 'vitest';
import { parseInvocation } from '../../src/cli/args.js';
import { cli, json } from './cliHarness.js';

describe('CLI conventions', () => {
  it.each(['-v', '-V', '--version'])('%s prints the version', (flag) => {
    expect(parseInvocation([flag])).toEqual({ ok: true, value: { kind: 'version' } });
  });

  it.each([
    [['list', '--jsno'], "unknown option '--jsno' (did you mean '--json'?)"],
    [['install', 'x', '--grant-netwrk'], "unknown option '--grant-netwrk' (did you mean '--grant-network'?)"],
    [['list', '--profile'], '--profile needs a value'],
    [['list', '--json=yes'], '--json takes no value'],
    [['list', '-q'], "unknown option '-q'"],
  ])('%j: a parse error in the CLI\'s words', (argv, message) => {
    expect(parseInvocation(argv)).toEqual({ ok: false, problem: { message, ...(argv[0] === undefined ? {} : { command: argv[0] }) } });
  });

  it('a misspelt option from the real CLI: the closest option, exit 2, no parseArgs text', async () => {
    const run = await cli(['list', '--jsno']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown option '--jsno' (did you mean '--json'?)");
    expect(run.stderr).not.toContain('positional argument');
  });

  it('no command: the error, then a short usage with the commands, exit 2', async () => {
    const run = await cli([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error HOST_INVALID_OPTIONS: no command given');
    expect(run.stderr).toMatch(/Usage: mcp-plugin-host <command>/);
    expect(run.stderr).toMatch(/Commands: init, validate, install, .*tools, .*serve/);
  });

  it('--profile-dir under /proc returns with a clear error instead of spinning', async () => {
    // install is the command that makes a missing profile (the others report it missing and make none).
    const run = await cli(['install', 'fixtures/plugins/hello', '--profile-dir', '/proc/nope', '--json']);
    expect(run.code).toBe(2);
    expect(json(run)).toMatchObject({ ok: false, error: { code: 'HOST_INVALID_OPTIONS', message: '--profile-dir /proc/nope: cannot create /proc/nope (ENOENT)' } });
    const listed = await cli(['list', '--profile-dir', '/proc/nope', '--json']);
    expect(json(listed)).toMatchObject({ ok: true, profile_exists: false, plugins: [] });
  });
});
