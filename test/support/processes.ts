import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** fixtures/sandbox, where the probe and lifecycle stand-in plugins live. */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'sandbox');
export const PROBE = join(FIXTURES, 'probe.mjs');
export const LIFECYCLE = join(FIXTURES, 'lifecycle.mjs');

/** Pids of live (non-zombie) processes whose command line contains `marker`, seen from outside. */
export function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(marker) && state !== 'Z') out.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return out;
}

/** The one Node process of a plugin running on the profile at `profileDir`, seen from outside (not the launcher chain around it). */
export function pluginNodeProcess(profileDir: string): number {
  const node = processesWith(profileDir).filter((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node');
  if (node.length !== 1) throw new Error(`expected one plugin process under ${profileDir}, found ${JSON.stringify(node)}`);
  return node[0]!;
}

/** Resolves with the first stdout line parsed as JSON. */
export function firstJsonLine<T = Record<string, unknown>>(stream: Readable): Promise<T> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8');
      const nl = buffered.indexOf('\n');
      if (nl === -1) return;
      stream.off('data', onData);
      try {
        resolve(JSON.parse(buffered.slice(0, nl)) as T);
      } catch (e) {
        reject(e as Error);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error(`stdout ended before a line: ${buffered}`)));
  });
}

/** Kills every process carrying `marker` (test cleanup). */
export function killAllWith(marker: string): void {
  for (const pid of processesWith(marker)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
}
