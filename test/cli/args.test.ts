/** Pure logic of the CLI: argument parsing and the exit-code table (the subprocess suites cover the rest). */
import { describe, expect, it } from 'vitest';
import { hostError } from '../../src/index.js';
import { parseInvocation, wantsJson } from '../../src/cli/args.js';
import { EXIT_CODES, exitCodeFor } from '../../src/cli/exitCodes.js';

const command = (argv: string[]) => {
  const parsed = parseInvocation(argv);
  if (!parsed.ok || parsed.value.kind !== 'command') throw new Error(`expected a command, got ${JSON.stringify(parsed)}`);
  return parsed.value;
};

describe('parseInvocation', () => {
  it('spreads --canary-args k=v ... into one override object, values read as JSON when they parse', () => {
    const inv = command(['canary', '--canary-args', 'n=5', 'flag=true', 'date=+7d', 'name=', 'hello', '--live']);
    expect(inv.positionals).toEqual(['hello']);
    expect(inv.flags.canaryArgs).toEqual({ n: 5, flag: true, date: '+7d', name: '' });
    expect(inv.flags.live).toBe(true);
  });

  it('merges a JSON object given to --canary-args and repeated flags', () => {
    expect(command(['canary', 'x', '--canary-args', '{"a":{"b":1}}', '--canary-args=c="s"']).flags.canaryArgs).toEqual({ a: { b: 1 }, c: 's' });
  });

  it('takes validate --live alone, as docs/cli.md writes it (the plugin is always started; --canary is kept for scripts)', () => {
    expect(command(['validate', './plugin', '--live']).flags).toMatchObject({ live: true });
  });

  it('reads global flags into typed values', () => {
    const inv = command(['run', 'p', 't', '{}', '--profile', 'work', '--dev', '--preset', 'gum', '--sandbox', 'landlock', '--max-risk', 'write', '--timeout', '2500', '-y', '--json']);
    expect(inv.flags).toMatchObject({ profile: 'work', dev: true, preset: 'gum', sandbox: 'landlock', maxRisk: 'write', timeoutMs: 2500, yes: true, json: true });
  });

  it.each([
    [['run', 'p', 't', '--timeout', '0'], '--timeout must be a positive number'],
    [['run', 'p', 't', '--timeout', '1.5'], '--timeout must be a positive number'],
    [['list', '--preset', 'other'], '--preset must be gum or neutral'],
    [['list', '--sandbox', 'bwrap'], '--sandbox must be auto, landlock, bubblewrap'],
    [['canary', 'x', '--canary-args', 'novalue'], 'key=value pairs'],
    // An optional argument is shown as the usage line shows it, never in the command table's `?` notation.
    [['run', 'p'], "'run' needs <plugin> <tool> [<json-args|->]"],
    [['run', 'p', 't', '{}', 'extra'], "'run' takes <plugin> <tool> [<json-args|->]; unexpected 'extra'"],
    [['list', '--profile='], '--profile needs a value'],
    [['install', 'npm:x', '--arg', '--stdio'], "--arg's value begins with '-': write it joined, --arg=-value (e.g. --arg=--stdio)"],
  ])('refuses %j', (argv, message) => {
    const parsed = parseInvocation(argv);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem.message).toContain(message);
  });

  it('routes help and version', () => {
    expect(parseInvocation(['help', 'run'])).toEqual({ ok: true, value: { kind: 'help', command: 'run' } });
    expect(parseInvocation(['install', '-h'])).toEqual({ ok: true, value: { kind: 'help', command: 'install' } });
    expect(parseInvocation(['-V'])).toEqual({ ok: true, value: { kind: 'version' } });
  });

  it('sees --json even on a command line that does not parse, but not after --', () => {
    expect(wantsJson(['nope', '--json'])).toBe(true);
    expect(wantsJson(['run', 'p', 't', '--', '--json'])).toBe(false);
  });
});

describe('exitCodeFor', () => {
  it('maps install-stage codes to 3 only while a package is being checked', () => {
    const refused = hostError('PLUGIN_EXECUTABLE_UNTRUSTED', 'x');
    expect(exitCodeFor(refused, true)).toBe(EXIT_CODES.validation);
    expect(exitCodeFor(refused, false)).toBe(EXIT_CODES.runtime);
  });

  it('gives the sandbox and usage their own codes everywhere', () => {
    for (const checking of [true, false]) {
      expect(exitCodeFor(hostError('PLUGIN_SANDBOX_UNSUPPORTED', 'x'), checking)).toBe(EXIT_CODES.sandboxUnsupported);
      expect(exitCodeFor(hostError('HOST_INVALID_OPTIONS', 'x'), checking)).toBe(EXIT_CODES.usage);
      expect(exitCodeFor(hostError('INVALID_ARGS', 'x'), checking)).toBe(EXIT_CODES.runtime);
      expect(exitCodeFor(hostError('CATALOG_LOCK_TIMEOUT', 'x'), checking)).toBe(EXIT_CODES.runtime);
    }
  });
});
