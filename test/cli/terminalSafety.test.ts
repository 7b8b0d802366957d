/**
 * What a package says reaches a person's terminal as text, never as escape
 * sequences: a name or description that moves the cursor could rewrite the
 * lines already shown, the powers a person is asked to approve at install
 * among them. The CLI runs for real; on a terminal under util-linux `script`.
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, onTerminal, REPO, tempDir } from './cliHarness.js';

const SLOW = 120_000;
// Up two lines, erase, and a fake row in place of the network row; then a window title.
const REWRITE = '\u001b[2A\r\u001b[2K  network          no\u001b[2B\r';
const TITLE = '\u001b]0;retitled\u0007';

/** The greeter fixture with the network declared and text fields carrying escape sequences. */
async function hostilePackage(dir: string): Promise<string> {
  const pkg = join(dir, 'hostile');
  await cp(join(REPO, 'fixtures/plugins/install-node'), pkg, { recursive: true });
  const manifest = JSON.parse(await readFile(join(pkg, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  manifest['name'] = `Greeter${REWRITE}`;
  manifest['description'] = `Greets people${TITLE}\nstatus           active`;
  manifest['declared_capabilities'] = { network: true, fs_write_dir: '', env_allow: [] };
  await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
  return pkg;
}

describe('package text on the terminal', () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  let pkg: string;
  beforeAll(async () => {
    scratch = await tempDir('cli-terminal-');
    pkg = await hostilePackage(scratch.path);
  });
  afterAll(() => scratch.dispose());

  it('asks to approve the powers with the package fields as text: no cursor move can rewrite the network row', { timeout: SLOW }, async () => {
    const profile = join(scratch.path, 'asked');
    const run = await onTerminal(['install', pkg, '--dev', '--skip-canary', '--profile-dir', profile], /run it with these powers\? \[y\/N\] /, 'n');
    const prompt = run.stdout.slice(run.stdout.indexOf('This plugin runs as code'));
    expect(prompt).toMatch(/network +yes/);
    expect(prompt).not.toContain('\u001b[2A');
    expect(prompt).not.toContain('\u001b]0;');
    expect(prompt).toMatch(/plugin +Greeter +network +no/);
  });

  it('wraps the powers question itself: a name padded past the edge of the terminal cannot pose as a row of its own', { timeout: SLOW }, async () => {
    // Under `script` the terminal reports no width: the CLI lays the question out for 80 columns. The plugin row's value
    // starts at column 20, so 53 spaces after the name reach the edge and the fake row would start the next screen line.
    const padded = join(scratch.path, 'padded');
    await cp(join(REPO, 'fixtures/plugins/install-node'), padded, { recursive: true });
    const manifest = JSON.parse(await readFile(join(padded, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    manifest['name'] = `Greeter${' '.repeat(53)}  network          no${' '.repeat(60)}`;
    manifest['declared_capabilities'] = { network: true, fs_write_dir: '', env_allow: [] };
    await writeFile(join(padded, 'manifest.json'), JSON.stringify(manifest));
    const run = await onTerminal(['install', padded, '--dev', '--skip-canary', '--profile-dir', join(scratch.path, 'padded-profile')], /run it with these powers\? \[y\/N\] /, 'n');
    const prompt = run.stdout.slice(run.stdout.indexOf('This plugin runs as code'), run.stdout.indexOf('[y/N]') + 5);
    const lines = prompt.split(/\r?\n/);
    expect(lines.filter((line) => line.length > 80)).toEqual([]);
    expect(lines.filter((line) => /^ {2}network /.test(line))).toEqual([expect.stringMatching(/^ {2}network +yes$/)]);
    // After the spinner's own clearing sequence: the question names the plugin by its id.
    expect(lines.at(-1)).toMatch(/(^|\u001b\[0J)Install greeter and run it with these powers\? \[y\/N\]$/);
  });

  it('shows tabs in a name as spaces: a tab moves the cursor further than the one column it takes in the text', { timeout: SLOW }, async () => {
    // Twenty tabs reach the terminal's last column; the X fills it and the fake row would start the next screen line.
    const tabbed = join(scratch.path, 'tabbed');
    await cp(join(REPO, 'fixtures/plugins/install-node'), tabbed, { recursive: true });
    const manifest = JSON.parse(await readFile(join(tabbed, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    manifest['name'] = `Greeter${'\t'.repeat(20)}X  network          no`;
    manifest['declared_capabilities'] = { network: true, fs_write_dir: '', env_allow: [] };
    await writeFile(join(tabbed, 'manifest.json'), JSON.stringify(manifest));
    const run = await onTerminal(['install', tabbed, '--dev', '--skip-canary', '--profile-dir', join(scratch.path, 'tabbed-profile')], /run it with these powers\? \[y\/N\] /, 'n');
    const prompt = run.stdout.slice(run.stdout.indexOf('This plugin runs as code'), run.stdout.indexOf('[y/N]') + 5);
    expect(prompt).not.toContain('\t');
    expect(prompt.split(/\r?\n/).filter((line) => line.length > 80)).toEqual([]);
  });

  it('shows a description as one line of text in info', { timeout: SLOW }, async () => {
    const profile = join(scratch.path, 'info');
    expect((await cli(['install', pkg, '--dev', '--yes', '--skip-canary', '--profile-dir', profile])).code).toBe(0);
    const info = await cli(['info', 'greeter', '--profile-dir', profile]);
    expect(info.code).toBe(0);
    expect(info.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(info.stdout).toMatch(/^description +Greets people +status +active$/m);
    await rm(profile, { recursive: true, force: true });
  });

  it('prints --json documents with C1 controls and line separators escaped, parsing to the same text', { timeout: SLOW }, async () => {
    // U+009B is a one-character CSI to terminals that honour C1 controls: erase the screen, then a fake status.
    const description = 'Greets people\u009b2J\u009b1;1Hstatus active\u2028\u007f';
    const c1Package = join(scratch.path, 'c1');
    await cp(join(REPO, 'fixtures/plugins/install-node'), c1Package, { recursive: true });
    const manifest = JSON.parse(await readFile(join(c1Package, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    manifest['description'] = description;
    await writeFile(join(c1Package, 'manifest.json'), JSON.stringify(manifest));
    const profile = join(scratch.path, 'c1-profile');
    expect((await cli(['install', c1Package, '--dev', '--yes', '--skip-canary', '--profile-dir', profile])).code).toBe(0);
    const info = await cli(['info', 'greeter', '--profile-dir', profile, '--json']);
    expect(info.code).toBe(0);
    expect(info.stdout).not.toMatch(/[\u007f-\u009f\u2028\u2029]/);
    expect(JSON.stringify(JSON.parse(info.stdout))).toContain(JSON.stringify(description).slice(1, -1));
  });

  it('shows a name with bidi controls in logical order: a right-to-left override cannot reorder the powers question', { timeout: SLOW }, async () => {
    // U+202E shows what follows right to left, so "Greeter‮on krowten" would read "Greeter network no"; U+2066..U+2069 isolate, U+200E/F and U+061C mark.
    const bidi = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c';
    const reordered = join(scratch.path, 'bidi');
    await cp(join(REPO, 'fixtures/plugins/install-node'), reordered, { recursive: true });
    const manifest = JSON.parse(await readFile(join(reordered, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    manifest['name'] = `Greeter\u202eon          krowten  ${bidi}`;
    manifest['description'] = `Greets people${bidi}`;
    manifest['declared_capabilities'] = { network: true, fs_write_dir: '', env_allow: [] };
    await writeFile(join(reordered, 'manifest.json'), JSON.stringify(manifest));
    const profile = join(scratch.path, 'bidi-profile');
    const run = await onTerminal(['install', reordered, '--dev', '--skip-canary', '--profile-dir', profile], /run it with these powers\? \[y\/N\] /, 'n');
    const prompt = run.stdout.slice(run.stdout.indexOf('This plugin runs as code'));
    expect(prompt).toMatch(/plugin +Greeteron {10}krowten/);
    expect(prompt).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    expect((await cli(['install', reordered, '--dev', '--yes', '--skip-canary', '--profile-dir', profile])).code).toBe(0);
    const info = await cli(['info', 'greeter', '--profile-dir', profile]);
    expect(info.stdout).toMatch(/^description +Greets people$/m);
    expect(info.stdout).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    const json = await cli(['info', 'greeter', '--profile-dir', profile, '--json']);
    expect(json.stdout).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    expect(JSON.stringify(JSON.parse(json.stdout))).toContain(JSON.stringify(`Greets people${bidi}`).slice(1, -1));
  });

  it('shows a plugin that dies at start with its stderr as text', { timeout: SLOW }, async () => {
    const dies = join(scratch.path, 'dies');
    await cp(join(REPO, 'fixtures/plugins/install-node'), dies, { recursive: true });
    await writeFile(join(dies, 'bin/greeter.mjs'), `#!/usr/bin/env node\nconsole.error(${JSON.stringify(`config missing${TITLE}\u001b[1A\u001b[2K`)});\nprocess.exit(2);\n`, { mode: 0o755 });
    const run = await cli(['validate', dies, '--no-color']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/plugin stderr \(last lines\):\n {2,4}config missing\n/);
    expect(run.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    const profile = join(scratch.path, 'dies-profile');
    expect((await cli(['install', dies, '--dev', '--skip-canary', '--profile-dir', profile])).code).toBe(0);
    const called = await cli(['run', 'greeter', 'greet', '{"name":"a"}', '--profile-dir', profile, '--no-color']);
    expect(called.stderr).toMatch(/plugin stderr \(last lines\):\n {2,4}config missing\n/);
    expect(called.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });
});
