/**
 * Concurrency: four processes each install 25 plugins into one profile at
 * the same time. All 100 are recorded, none is lost, no process sees an error
 * (lock waits only), and a reader polling meanwhile without the lock always
 * sees one consistent generation.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CatalogStore, PROFILE_LOCK_FILE } from '../../src/catalog/CatalogStore.js';
import { listPlugins } from '../../src/catalog/catalogContents.js';
import { bundleScript } from '../support/bundleScript.js';
import { startHelper, type Helper } from '../support/childHelper.js';

let helper: { file: string; dir: string };
let base: string;
beforeAll(async () => {
  helper = await bundleScript(join(import.meta.dirname, 'helpers/installLoop.ts'));
  base = mkdtempSync(join(tmpdir(), 'catalog-concurrency-'));
});
afterAll(() => {
  rmSync(helper.dir, { recursive: true, force: true });
  rmSync(base, { recursive: true, force: true });
});

it('records all 100 installs of 4 processes × 25 on one profile', { timeout: 120_000 }, async () => {
  const dir = join(base, 'profile');
  const reader = (await CatalogStore.open({ profileDir: dir, profile: 'work' }))._unsafeUnwrap();
  const reports = join(base, 'reports');
  mkdirSync(reports);
  const children = ['a', 'b', 'c', 'd'].map((prefix) =>
    startHelper(helper.file, [dir, 'work', prefix, '25'], ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${reports}`]),
  );

  let running = true;
  let reads = 0;
  let lastGeneration = 0;
  const polling = (async () => {
    while (running) {
      const snap = (await reader.snapshot())._unsafeUnwrap();
      const ids = Object.keys(snap.contents.plugins).sort();
      expect(Object.keys(snap.contents.states).sort()).toEqual(ids);
      expect([...new Set(snap.contents.variants.map((v) => v.plugin_id))].sort()).toEqual(ids);
      expect(ids.length).toBe(snap.install_generation);
      expect(snap.install_generation).toBeGreaterThanOrEqual(lastGeneration);
      lastGeneration = snap.install_generation;
      reads++;
      await new Promise((r) => setTimeout(r, 1));
    }
  })();

  const exits = await exitsOrDiagnosis(children, dir, reports).finally(() => (running = false));
  await polling;
  for (const exit of exits) {
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    expect(exit.stdout).toContain('done 25');
  }
  const snap = (await reader.snapshot())._unsafeUnwrap();
  const ids = listPlugins(snap).map((p) => p.plugin_id);
  expect(ids).toHaveLength(100);
  for (const prefix of ['a', 'b', 'c', 'd']) for (let i = 0; i < 25; i++) expect(ids).toContain(`${prefix}-${i}`);
  expect(snap.install_generation).toBe(100);
  expect(reads).toBeGreaterThan(0);
});

/** Children still running after this long are stuck: the test fails with what they were doing instead of timing out. */
const STUCK_AFTER_MS = 90_000;

/**
 * Waits for every child; past STUCK_AFTER_MS asks each one still running for
 * a Node diagnostic report (its pending fs requests and timers), kills it,
 * and fails naming its last progress line, the lock file and the report.
 */
async function exitsOrDiagnosis(children: Helper[], dir: string, reports: string): Promise<Awaited<Helper['exited']>[]> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<'stuck'>((resolve) => (timer = setTimeout(() => resolve('stuck'), STUCK_AFTER_MS)));
  const all = Promise.all(children.map((c) => c.exited));
  const first = await Promise.race([all, stuck]);
  clearTimeout(timer);
  if (first !== 'stuck') return first;
  const running = children.filter((c) => c.child.exitCode === null && c.child.signalCode === null);
  for (const c of running) c.child.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, 2_000));
  for (const c of running) c.child.kill('SIGKILL');
  const exits = await all;
  const lockFile = join(dir, PROFILE_LOCK_FILE);
  const diagnosis = {
    stuck: running.map((c) => c.child.pid),
    last_lines: exits.map((e) => e.stdout.split('\n').at(-1)),
    stderr: exits.map((e) => e.stderr),
    lock: existsSync(lockFile) ? readFileSync(lockFile, 'utf8') : 'none',
    reports: readdirSync(reports).map((f) => {
      const report = JSON.parse(readFileSync(join(reports, f), 'utf8')) as { header: { processId: number }; javascriptStack?: unknown; libuv?: unknown[] };
      return { pid: report.header.processId, stack: report.javascriptStack, libuv: report.libuv?.filter((h) => (h as { is_referenced?: boolean }).is_referenced) };
    }),
  };
  expect.fail(`children stuck after ${STUCK_AFTER_MS} ms: ${JSON.stringify(diagnosis, null, 1)}`);
}
