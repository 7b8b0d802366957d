/**
 * A local `npm:` tarball takes its name, version and owner from its own
 * package.json, and nothing checks them against the registry. The install
 * question and `info` must say it is a local tarball, at its path, not
 * present it as the registry package it names. The CLI runs for real, the
 * question on a terminal under util-linux `script`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { GREETER_SERVER, packServer } from '../npm/npmPack.js';
import { cli, onTerminal, tempDir } from './cliHarness.js';

const SLOW = 120_000;
const CLAIMED = '@modelcontextprotocol/server-filesystem';
const CLAIMED_OWNER = `npm:${CLAIMED}`;
const CLAIM_NOTE = "(claimed by the tarball's package.json, not checked against the npm registry)";
const flat = (text: string): string => text.replace(/\s+/g, '');

describe('a local npm tarball that names a registry package', () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  let tarball: string;
  beforeAll(async () => {
    scratch = await tempDir('cli-tarball-');
    tarball = await packServer(scratch.path, { name: CLAIMED, source: GREETER_SERVER });
  });
  afterAll(() => scratch.dispose());

  it('is asked for and shown as a local tarball at its path, its owner as the tarball\'s own claim', { timeout: SLOW }, async () => {
    const profile = join(scratch.path, 'profile');
    const asked = await onTerminal(['install', `npm:${tarball}`, '--skip-canary', '--profile-dir', profile], /run it with these powers\? \[y\/N\] /, 'n');
    // The rows are wrapped to the terminal, at a space or inside a word: compared without white space.
    const question = flat(asked.stdout.slice(asked.stdout.indexOf('This plugin runs as code'), asked.stdout.indexOf('[y/N]')));
    expect(question).not.toContain(flat('from a npm package'));
    expect(question).toContain(flat(`(server-filesystem, from local npm tarball ${tarball}, not the npm registry)`));
    expect(question).toContain(flat(`namespace owner ${CLAIMED_OWNER} ${CLAIM_NOTE}`));

    expect((await cli(['install', `npm:${tarball}`, '--yes', '--skip-canary', '--profile-dir', profile])).code).toBe(0);
    const info = await cli(['info', 'server-filesystem', '--profile-dir', profile, '--no-color']);
    expect(info.stdout).toMatch(new RegExp(`^package +local npm tarball ${tarball.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`, 'm'));
    expect(info.stdout).toMatch(/^namespace owner +npm:@modelcontextprotocol\/server-filesystem \(claimed by the tarball's package\.json, not checked against the npm registry\)$/m);
  });
});
