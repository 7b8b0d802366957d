/**
 * `setup` without the secret in the command line: `--set NAME=-` reads it
 * from stdin (a real CLI process, the value piped in), and the old
 * `--set NAME=value` still works but says on stderr where the value shows.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS_ORIGIN_KEY } from '../../src/host/credentials.js';
import { cli, GREETER_ENV, packageGreeter, packageHello, tempDir, type RunOptions } from './cliHarness.js';

const SLOW = 120_000;
const SECRET = 'piped-s3cret-never-in-argv';

describe('setup keeps secrets out of argv', () => {
  let profile: Awaited<ReturnType<typeof tempDir>>;
  let hello: string;
  let greeter: string;
  const inProfile = (args: readonly string[], options: RunOptions = {}) => cli([...args, '--profile-dir', profile.path], options);
  const stored = async (): Promise<unknown> => {
    const dir = join(profile.path, 'secrets');
    const files = await readdir(dir);
    const values = JSON.parse(await readFile(join(dir, files.find((f) => f.startsWith('greeter')) ?? ''), 'utf8')) as Record<string, string>;
    // The origin of the package the values were stored for is recorded with them (review R2 F4); it is not a value.
    expect(values[CREDENTIALS_ORIGIN_KEY]).toMatch(/^directory:/);
    return Object.fromEntries(Object.entries(values).filter(([name]) => name !== CREDENTIALS_ORIGIN_KEY));
  };

  beforeAll(async () => {
    profile = await tempDir('cli-setup-secrets-');
    hello = await packageHello();
    greeter = await packageGreeter(hello);
    expect((await inProfile(['install', greeter, '--dev'])).code).toBe(0);
  }, SLOW);
  afterAll(async () => {
    await profile.dispose();
    await rm(hello, { recursive: true, force: true });
    await rm(greeter, { recursive: true, force: true });
  });

  it('--set NAME=- stores what stdin holds (without its line break), and warns of nothing', { timeout: SLOW }, async () => {
    const run = await inProfile(['setup', 'greeter', '--set', `${GREETER_ENV}=-`], { input: `${SECRET}\n` });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('stored 1 credential (greeter-token) for greeter');
    expect(run.stderr).not.toMatch(/warning/);
    expect(await stored()).toEqual({ [GREETER_ENV]: SECRET });
  });

  it('--set NAME=- with nothing on stdin is a usage error that stores nothing', { timeout: SLOW }, async () => {
    const run = await inProfile(['setup', 'greeter', '--set', 'greeter-token=-'], { input: '' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--set greeter-token: stdin gave no value');
    expect(await stored()).toEqual({ [GREETER_ENV]: SECRET });
  });

  it('--set NAME=value still stores the value, and warns that the command line shows it', { timeout: SLOW }, async () => {
    const typed = `${SECRET}-typed`;
    const run = await inProfile(['setup', 'greeter', '--set', `${GREETER_ENV}=${typed}`]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^warning: --set GREETER_TOKEN=<value> puts the secret in the command line, .* use --set GREETER_TOKEN=- \(stdin\)/m);
    expect(run.stdout + run.stderr).not.toContain(typed);
    expect(await stored()).toEqual({ [GREETER_ENV]: typed });
  });
});
