/**
 * Child process for the crash and concurrency tests: installs plugins into a
 * profile in a loop. argv: profileDir, profile, prefix, count (0 = until
 * killed), and optionally `wait` to start only after a line on stdin (so a
 * test can start children ahead of time). A waiting child first runs one
 * transaction in a scratch profile, so that one-time costs (compiling the
 * schemas) are paid before the test's clock starts. Prints "ready" once the
 * store is open, "installed <n>" after each transaction and "done <n>" at
 * the end.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatalogStore } from '../../../src/catalog/CatalogStore.js';
import { putPlugin } from '../../../src/catalog/catalogContents.js';
import { pluginRecords } from './catalogFixtures.js';

const [profileDir, profile, prefix, countArg, mode] = process.argv.slice(2);
if (profileDir === undefined || profile === undefined || prefix === undefined) throw new Error('usage: profileDir profile prefix count [wait]');
const count = Number(countArg ?? '0');

async function warmUp(): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'catalog-warm-'));
  try {
    const warm = await CatalogStore.open({ profileDir: scratch, profile: 'warm' });
    if (warm.isOk()) await warm.value.transaction((current) => putPlugin(current, pluginRecords('warm')));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

if (mode === 'wait') {
  await warmUp();
  await once(process.stdin, 'data');
}
const store = await CatalogStore.open({ profileDir, profile });
if (store.isErr()) {
  process.stderr.write(`${JSON.stringify(store.error.toJSON())}\n`);
  process.exit(2);
}
process.stdout.write('ready\n');
let n = 0;
for (let i = 0; count === 0 || i < count; i++) {
  const result = await store.value.transaction((current) => putPlugin(current, pluginRecords(`${prefix}-${i}`)));
  if (result.isErr()) {
    process.stderr.write(`${JSON.stringify(result.error.toJSON())}\n`);
    process.exit(3);
  }
  n++;
  process.stdout.write(`installed ${n}\n`);
}
process.stdout.write(`done ${n}\n`);
process.exit(0);
