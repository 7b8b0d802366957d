/**
 * The CLI on a terminal asks before an npm server's introspection start gets
 * the granted network: a question of its own, naming the network and saying
 * the tools are not listed yet, before the usual install question. The CLI
 * runs from source on a pseudo-terminal (util-linux `script`).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onTerminal, tempDir } from '../cli/cliHarness.js';
import { packGreeterServer } from './npmPack.js';

describe('install npm:<tarball> --grant-network on a terminal', () => {
  let scratch: Awaited<ReturnType<typeof tempDir>>;
  let tarball: string;
  beforeAll(async () => {
    scratch = await tempDir('cli-networked-introspection-');
    tarball = await packGreeterServer(scratch.path, join(scratch.path, 'marker'));
  });
  afterAll(() => scratch.dispose());

  it('asks to start the server once with the network before it lists its tools; declining installs nothing', { timeout: 180_000 }, async () => {
    const profile = join(scratch.path, 'profile');
    const run = await onTerminal(['install', `npm:${tarball}`, '--grant-network', '--skip-canary', '--profile-dir', profile], /list its tools\? \[y\/N\] /, 'n');
    const prompt = run.stdout.slice(run.stdout.indexOf('This plugin runs as code'), run.stdout.indexOf('[y/N]') + 5);
    expect(prompt).toMatch(/^ {2}network +yes\r?$/m);
    // The row wraps at the 80 columns `script` lays the question out for.
    expect(prompt).toMatch(/^ {2}tools +not listed yet: it starts once, with this network, to list t/m);
    expect(prompt).toMatch(/Start greeter-npm once with this network to list its tools\? \[y\/N\]$/);
    expect(run.stdout).not.toMatch(/Install greeter-npm and run it with these powers/);
    expect(run.stdout).toContain('PLUGIN_TRUST_DECLINED');
    expect(run.code).not.toBe(0);
  });
});
