/**
 * What only a terminal sees: prompts, hidden input, the progress indicator
 * and colour. The CLI runs under a real pseudo-terminal (util-linux
 * `script`), and the answer is typed once the prompt has appeared.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, GREETER_ENV, onTerminal, packageGreeter, packageHello, tempDir } from './cliHarness.js';

const SLOW = 120_000;
const SECRET = 'typed-on-the-terminal-secret';

describe('on a terminal', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  let greeter: string;

  beforeAll(async () => {
    profile = await tempDir('cli-tty-');
    hello = await packageHello();
    greeter = await packageGreeter(hello);
    const installed = await cli(['install', greeter, '--dev', '--profile-dir', profile.path]);
    expect(installed.code).toBe(0);
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
    await rm(greeter, { recursive: true, force: true });
  });

  it('setup prompts with display name and setup hint, hides the typed secret, and shows progress in colour', { timeout: SLOW }, async () => {
    const run = await onTerminal(['setup', 'greeter', '--profile-dir', profile.path], /greeter-token \(input hidden\): /, SECRET);
    expect(run.code).toBe(0);
    const text = run.stdout;
    expect(text).toContain('Greeter token');
    expect(text).toContain('Any non-empty text works for this fixture');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(GREETER_ENV);
    // A spinner frame redrawn in place, then the line erased.
    expect(text).toMatch(/\r\u001b\[2K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] storing 1 credential\(s\)/);
    expect(text).toContain('stored 1 credential (greeter-token) for greeter');
    expect(text).toMatch(/\u001b\[32m✓\u001b\[39m set up greeter: canary \u001b\[32mpassed\u001b\[39m \(live\)/);
  });

  it('the same command through pipes draws no spinner and no colour', { timeout: SLOW }, async () => {
    const run = await cli(['setup', 'greeter', '--set', `${GREETER_ENV}=-`, '--profile-dir', profile.path], { input: SECRET });
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).not.toMatch(/\u001b\[/);
    expect(run.stderr).toBe('');
  });

  it('remove asks first: no keeps the plugin, yes removes it', { timeout: SLOW }, async () => {
    const question = /Remove greeter 0\.1\.0\? Its data directory and credentials are kept\. \[y\/N\] /;
    const kept = await onTerminal(['remove', 'greeter', '--profile-dir', profile.path], question, 'n');
    expect(kept.code).toBe(1);
    expect(kept.stdout).toContain('PLUGIN_CONFIRMATION_DENIED');
    expect((await cli(['info', 'greeter', '--profile-dir', profile.path])).code).toBe(0);
    const removed = await onTerminal(['remove', 'greeter', '--profile-dir', profile.path], question, 'y');
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('removed greeter');
    expect((await cli(['info', 'greeter', '--profile-dir', profile.path])).code).toBe(1);
  });
});
