// Positive control of the orphan scan every scenario and the load test rely on: a "no survivor" verdict
// means something only if the scan finds a live marked process, its forked children included.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { afterEach, expect, it } from 'vitest';
import { killMarked, processesWithMarker, survivorsAfter } from './support/processScan.js';

/** A parent that forks a detached child carrying the same environment, prints the child's pid, then idles. */
const PARENT = `
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { detached: true, stdio: 'ignore' });
child.unref();
process.stdout.write(child.pid + '\\n');
setInterval(() => {}, 60000);
`;

let marker = '';
let parent: ChildProcess | undefined;

afterEach(() => {
  killMarked(marker);
  parent?.kill('SIGKILL');
});

it('the process scan finds a live marked process and its child, and nothing once they are killed', async () => {
  marker = `scan-control-${randomBytes(6).toString('hex')}`;
  parent = spawn(process.execPath, ['-e', PARENT], { env: { ...process.env, FAULT_MARKER: marker }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
  const childPid = Number(line.toString().trim());

  const found = processesWithMarker(marker).map((p) => p.pid).sort((a, b) => a - b);
  expect(found).toEqual([parent.pid!, childPid].sort((a, b) => a - b));
  expect(processesWithMarker(`${marker}-other`)).toEqual([]);

  const exited = once(parent, 'exit');
  killMarked(marker);
  await exited;
  expect(await survivorsAfter(marker, 10_000)).toEqual([]);
});
