import { describe, expect, it } from 'vitest';
import { parseRunnerArguments, runnerArguments, type EsmRunnerSettings } from '../../../src/shapes/esm/runnerArgs.js';

const SHA = 'ab'.repeat(32);
const base: EsmRunnerSettings = { root: '/p', strictCapabilities: false, strictTools: false, watch: false, debugRegistry: false };

describe('runner arguments of a verified entry', () => {
  it('round-trip the pinned entry, its SHA-256 and its descriptor', () => {
    const settings: EsmRunnerSettings = { ...base, verifiedEntry: { path: 'dist/index.mjs', sha256: SHA, fd: 3 } };
    const args = runnerArguments(settings);
    expect(args).toEqual(['--entry', 'dist/index.mjs', '--entry-sha256', SHA, '--entry-fd', '3', '--', '/p']);
    expect(parseRunnerArguments(args)._unsafeUnwrap()).toEqual(settings);
  });

  it.each([
    [['--entry', 'dist/index.mjs', '--', '/p']],
    [['--entry', 'dist/index.mjs', '--entry-sha256', 'xyz', '--entry-fd', '3', '--', '/p']],
    [['--entry', 'dist/index.mjs', '--entry-sha256', SHA, '--entry-fd', '1', '--', '/p']],
    [['--entry-sha256', SHA, '--entry-fd', '3', '--', '/p']],
  ])('refuses an incomplete or malformed pin %j', (args) => {
    expect(parseRunnerArguments(args)._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('refuses --watch with a verified entry: a reload would read the entry from disk', () => {
    const args = ['--watch', '--entry', 'dist/index.mjs', '--entry-sha256', SHA, '--entry-fd', '3', '--', '/p'];
    expect(parseRunnerArguments(args)._unsafeUnwrapErr().message).toContain('--watch');
  });
});
