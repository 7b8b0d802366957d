/**
 * What a plugin writes in its launcher's words is not its launcher's failure:
 * a launcher (setpriv here, bubblewrap or the Landlock launcher under the
 * sandbox) fails before the plugin runs, so before anything on stdout. Real
 * processes through spawnPluginProcess.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { spawnPluginProcess, unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { FIXTURES, firstJsonLine } from '../support/processes.js';

const started: PluginProcess[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
});

async function run(argv: string[]): Promise<PluginProcess> {
  const p = (await spawnPluginProcess({ executable: unverifiedCommand(argv, FIXTURES), env: {} }))._unsafeUnwrap();
  started.push(p);
  return p;
}

describe('a launcher failure line', () => {
  it('written by a plugin that already answered on stdout is its own stderr, not the launcher failing', async () => {
    const forged = 'setpriv: failed to execute node: No such file or directory';
    const p = await run([process.execPath, '-e', `process.stdout.write('{"ready":true}\\n'); process.stderr.write(${JSON.stringify(`${forged}\n`)}); setTimeout(() => process.exit(1), 50);`]);
    expect(await firstJsonLine(p.stdout)).toEqual({ ready: true });
    const exit = await p.exited;
    // Before, the description read "could not execute the plugin: setpriv: failed to execute node: ..." for a plugin that had run.
    expect(exit.description).not.toContain('could not execute');
    expect(exit.status).toBe(1);
    expect(p.stderrTail()).toContain(forged);
  });
});
