/**
 * The `unit` vitest project (`npm run test:fast`) stays what the README promises: every file it names exists, and
 * none of them starts a process, a sandbox or a host, so the fast feedback stays fast.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UNIT } from '../../vitest.config.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const ANY_FOLDER = 'test/**/';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith('.test.ts') ? [relative(REPO, join(dir, entry.name))] : [],
  );
}

const ALL = testFiles(join(REPO, 'test'));
const matches = (pattern: string): string[] =>
  pattern.startsWith(ANY_FOLDER) ? ALL.filter((file) => file.endsWith(`/${pattern.slice(ANY_FOLDER.length)}`)) : ALL.filter((file) => file === pattern);

/** What a pure-logic test file never uses: process spawning, the sandbox, a whole host, the testing kit's start, a build. */
const STARTS_SOMETHING = [
  /from 'node:child_process'/,
  /(support\/(plainLauncher|mcpLaunch|mcpFixtures|processes|hostHarness|childHelper|faultPackages|esmRunner)|cliHarness)\.js'/,
  /src\/sandbox\/SandboxSpawner\.js'/,
  /src\/host\/PluginHost\.js'/,
  /\bstartPlugin\(/,
  /from 'tsup'/,
];

describe('the unit project', () => {
  it.each(UNIT)('names existing test files (%s)', (pattern) => {
    expect(matches(pattern)).not.toEqual([]);
  });

  it('starts no process, sandbox or host', () => {
    // This file spells the patterns out, so it is the one file not scanned.
    const self = relative(REPO, fileURLToPath(import.meta.url));
    const offenders = UNIT.flatMap(matches).filter((file) => file !== self).flatMap((file) => {
      const text = readFileSync(join(REPO, file), 'utf8');
      return STARTS_SOMETHING.filter((pattern) => pattern.test(text)).map((pattern) => `${file}: ${pattern.source}`);
    });
    expect(offenders).toEqual([]);
  });
});
