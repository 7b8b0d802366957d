/**
 * The JSONL audit file is bounded (a busy or hostile workload must not fill the disk): at `maxFileBytes` it is
 * rotated to `<path>.1`, older files shifted up to `<path>.<keepFiles>`, and a record that would cross the bound
 * goes whole to the new file. Real files, real renames; the sizes are exact because the lines are.
 */
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import auditDefaults from '../../etc/audit-defaults.json' with { type: 'json' };
import { auditLine } from '../../src/audit/auditLines.js';
import type { AuditCallRecord, AuditRecord } from '../../src/audit/auditRecord.js';
import { JsonlAuditSink, type JsonlAuditSinkOptions } from '../../src/audit/JsonlAuditSink.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'audit-rotation-'));
  dirs.push(dir);
  return dir;
}

/** A call record whose `op_id` names its writer and sequence number (fixed width: equal `pad`, equal size); `pad` makes the line longer. */
function record(writer: number, n: number, pad = 0): AuditCallRecord {
  const id = `w${String(writer).padStart(2, '0')}.n${String(n).padStart(4, '0')}`;
  return { kind: 'call', at: new Date(0).toISOString(), op_id: `${id}${'x'.repeat(pad)}`, outcome: 'ok', duration_ms: 0 };
}
/** The op id of `record(writer, n)` without padding. */
const idOf = (writer: number, n: number): string => record(writer, n).op_id;

/** The bytes a record takes in the file, newline included. */
const lineBytes = (r: AuditRecord, maxLineBytes = 1024): number => Buffer.byteLength(auditLine(r, maxLineBytes)) + 1;

async function opened(path: string, options: JsonlAuditSinkOptions): Promise<JsonlAuditSink> {
  return (await JsonlAuditSink.open(path, options))._unsafeUnwrap();
}

/** Every record of one file; each line must be a whole JSON object and the file must end with a newline. */
async function records(path: string): Promise<AuditRecord[]> {
  const text = await readFile(path, 'utf8');
  if (text === '') return [];
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as AuditRecord);
}

/** The records of the live file and its rotated ones, oldest first. */
async function allRecords(path: string, keepFiles: number): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  for (let n = keepFiles; n >= 1; n -= 1) out.push(...(await records(`${path}.${n}`).catch(() => [])));
  out.push(...(await records(path)));
  return out;
}

const opIds = (list: readonly AuditRecord[]): string[] => list.map((r) => (r as AuditCallRecord).op_id);

describe('JsonlAuditSink rotation', () => {
  it('rotates at maxFileBytes: the live file never passes the bound, the rotated one was filled up to it, every record kept in order', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096, keepFiles: 3 });
    const written = Array.from({ length: 60 }, (_, n) => record(0, n, 10));
    for (const r of written) sink.write(r);
    (await sink.flush())._unsafeUnwrap();
    const size = lineBytes(written[0]!);
    // 60 records of this size are about 1.5 files' worth of 4096 bytes.
    expect(60 * size).toBeGreaterThan(4096);
    expect(60 * size).toBeLessThan(2 * 4096);
    const perFile = Math.floor(4096 / size);
    expect((await stat(`${path}.1`)).size).toBe(perFile * size);
    expect((await stat(path)).size).toBe((60 - perFile) * size);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(`${path}.1`)).mode & 0o777).toBe(0o600);
    expect(opIds(await allRecords(path, 3))).toEqual(opIds(written));
    expect((await readdir(dir)).sort()).toEqual(['audit.jsonl', 'audit.jsonl.1']);
    (await sink.close())._unsafeUnwrap();
  });

  it('keeps keepFiles rotated files, the oldest replaced: the newest records, contiguous, up to the last one', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096, keepFiles: 2, fsync: 'none' });
    const written = Array.from({ length: 400 }, (_, n) => record(0, n, 10));
    // Several batches, so that rotations happen between writes as well as inside one batch.
    for (let i = 0; i < written.length; i += 37) {
      written.slice(i, i + 37).forEach((r) => sink.write(r));
      (await sink.flush())._unsafeUnwrap();
    }
    (await sink.close())._unsafeUnwrap();
    expect((await readdir(dir)).sort()).toEqual(['audit.jsonl', 'audit.jsonl.1', 'audit.jsonl.2']);
    const kept = opIds(await allRecords(path, 2));
    const size = lineBytes(written[0]!);
    // Three files' worth at most, the two rotated ones full up to the bound.
    expect(kept.length).toBeLessThanOrEqual(3 * Math.floor(4096 / size));
    expect(kept.length).toBeGreaterThan(2 * Math.floor(4096 / size));
    expect(kept).toEqual(opIds(written.slice(written.length - kept.length)));
    for (const name of [path, `${path}.1`, `${path}.2`]) expect((await stat(name)).size).toBeLessThanOrEqual(4096);
  });

  it('writes a record that would cross the bound whole to the new file, leaving the old one byte for byte as it was', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const before = `${JSON.stringify(record(9, 0))}\n`;
    // An existing file 100 bytes short of the bound: the next record (about 300 bytes) does not fit.
    const existing = before.repeat(Math.floor((4096 - 200) / before.length));
    const filler = `${'{"kind":"gap"}'.padEnd(4096 - 100 - existing.length - 1, ' ')}\n`;
    await writeFile(path, existing + filler, { mode: 0o600 });
    expect((await stat(path)).size).toBe(4096 - 100);
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096 });
    const crossing = record(1, 1, 200);
    expect(lineBytes(crossing)).toBeGreaterThan(100);
    sink.write(crossing);
    (await sink.close())._unsafeUnwrap();
    expect(await readFile(`${path}.1`, 'utf8')).toBe(existing + filler);
    expect(await readFile(path, 'utf8')).toBe(`${auditLine(crossing, 1024)}\n`);
  });

  it('a record that fits exactly stays in the file; the next one starts the new file', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const size = lineBytes(record(0, 0));
    await writeFile(path, `${'{}'.padEnd(4096 - size - 1, ' ')}\n`, { mode: 0o600 });
    const again = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096 });
    again.write(record(0, 0));
    again.write(record(0, 1));
    (await again.close())._unsafeUnwrap();
    expect((await stat(`${path}.1`)).size).toBe(4096);
    expect(opIds((await records(`${path}.1`)).slice(1))).toEqual([idOf(0, 0)]);
    expect(opIds(await records(path))).toEqual([idOf(0, 1)]);
  });

  it('keeps the order of concurrent writers in one process across rotations', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const keepFiles = 50;
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096, keepFiles });
    const order: string[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async (_, writer) => {
        for (let n = 0; n < 40; n += 1) {
          // Writers take turns with each other and with the sink's own writer and its rotations.
          if ((n + writer) % 3 === 0) await nextTurn();
          const r = record(writer, n, (writer * 7 + n) % 50);
          order.push(r.op_id);
          sink.write(r);
        }
      }),
    );
    (await sink.close())._unsafeUnwrap();
    const files = await readdir(dir);
    // 640 records of ~150 bytes: many rotations, none of the files gone yet.
    expect(files.length).toBeGreaterThan(10);
    expect(files.length).toBeLessThan(keepFiles);
    expect(opIds(await allRecords(path, keepFiles))).toEqual(order);
  });

  it('two sinks on one file (two gateways of one configuration) keep each other\'s newest records: each follows the other\'s rotation', async () => {
    // Before (review R15): the sink that did not rotate kept appending to `<path>.1`, which the next rotations shifted
    // out and deleted, so every record it wrote from then on was lost (its last kept record was about the 140th of 400).
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const keepFiles = 2;
    const options = { maxLineBytes: 1024, maxFileBytes: 4096, keepFiles };
    const sinks = [await opened(path, options), await opened(path, options)];
    const written: string[][] = [[], []];
    for (let n = 0; n < 200; n += 1) {
      for (const [writer, sink] of sinks.entries()) {
        const r = record(writer, n);
        written[writer]?.push(r.op_id);
        sink.write(r);
      }
      // A batch each now and then, as two processes' writers take turns.
      if (n % 5 === 4) for (const sink of sinks) (await sink.flush())._unsafeUnwrap();
    }
    for (const sink of sinks) (await sink.close())._unsafeUnwrap();
    // Only the bounded set of files: the live one and keepFiles rotated ones.
    expect((await readdir(dir)).sort()).toEqual(['audit.jsonl', 'audit.jsonl.1', 'audit.jsonl.2']);
    const kept = new Set(opIds(await allRecords(path, keepFiles)));
    // ~3 files of ~60 records: each writer's newest 20 records are there.
    for (const ids of written) expect(ids.slice(-20).filter((id) => !kept.has(id))).toEqual([]);
  });

  it('after an outside rename, follows a new 0600 file at the path; a file it may not use leaves records in the renamed one', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096, keepFiles: 2 });
    sink.write(record(0, 0));
    (await sink.flush())._unsafeUnwrap();
    // logrotate's rename and create: a 0600 file of this user is the live file from the next batch on.
    await rename(path, `${path}.old`);
    await writeFile(path, '', { mode: 0o600 });
    sink.write(record(0, 1));
    (await sink.flush())._unsafeUnwrap();
    expect(opIds(await records(`${path}.old`))).toEqual([idOf(0, 0)]);
    expect(opIds(await records(path))).toEqual([idOf(0, 1)]);
    // One others may read is not used: the record goes on in the file the sink holds, and flush says why.
    await rename(path, `${path}.old2`);
    await writeFile(path, '', { mode: 0o644 });
    sink.write(record(0, 2));
    const flushed = await sink.flush();
    expect(flushed._unsafeUnwrapErr().code).toBe('AUDIT_FILE_UNSAFE');
    expect(opIds(await records(`${path}.old2`))).toEqual([idOf(0, 1), idOf(0, 2)]);
    expect(await readFile(path, 'utf8')).toBe('');
    (await sink.close())._unsafeUnwrap();
  });

  it('rotates an existing file already past the bound at the first write, keeping it whole', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    const old = `${JSON.stringify(record(7, 7))}\n`.repeat(100);
    await writeFile(path, old, { mode: 0o600 });
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096 });
    sink.write(record(0, 0));
    (await sink.close())._unsafeUnwrap();
    expect(await readFile(`${path}.1`, 'utf8')).toBe(old);
    expect(opIds(await records(path))).toEqual([idOf(0, 0)]);
  });

  it('when a rotation fails, keeps the bound, counts the records it could not write and reports them in a gap record once it rotates', async () => {
    const dir = await scratch();
    const path = join(dir, 'audit.jsonl');
    // A non-empty folder where the rotated file must go: the rename fails.
    await mkdir(`${path}.1`);
    await writeFile(join(`${path}.1`, 'in-the-way'), '');
    const sink = await opened(path, { maxLineBytes: 1024, maxFileBytes: 4096, keepFiles: 1 });
    const size = lineBytes(record(0, 0, 10));
    const fit = Math.floor(4096 / size);
    for (let n = 0; n < fit + 5; n += 1) sink.write(record(0, n, 10));
    const flushed = await sink.flush();
    expect(flushed.isErr() && flushed.error.message).toMatch(/Rotating the audit file/);
    expect((await stat(path)).size).toBe(fit * size);
    expect(sink.dropped).toBe(5);

    await rm(`${path}.1`, { recursive: true });
    sink.write(record(1, 0));
    (await sink.close())._unsafeUnwrap();
    // The gap record is short: it may still fit the old file; the call after it does not.
    const kept = await allRecords(path, 1);
    expect(opIds(kept.slice(0, fit))).toEqual(Array.from({ length: fit }, (_, n) => record(0, n, 10).op_id));
    expect(kept.slice(fit)).toMatchObject([{ kind: 'gap', dropped: 5 }, { op_id: idOf(1, 0) }]);
    expect(opIds(await records(path)).at(-1)).toBe(idOf(1, 0));
    expect((await stat(`${path}.1`)).size).toBeLessThanOrEqual(4096);
  });

  it('refuses bounds that leave no room for one line, and a keepFiles under 1 (HOST_INVALID_OPTIONS)', async () => {
    const path = join(await scratch(), 'audit.jsonl');
    for (const options of [{ maxFileBytes: auditDefaults.minFileBytes - 1 }, { maxLineBytes: 8192, maxFileBytes: 8192 }, { keepFiles: 0 }, { maxFileBytes: 1.5e6 + 0.5 }]) {
      const refused = await JsonlAuditSink.open(path, options);
      expect(refused.isErr() && refused.error.code).toBe('HOST_INVALID_OPTIONS');
    }
    // The defaults hold a default line many times over.
    expect(auditDefaults.maxFileBytes).toBeGreaterThan(100 * auditDefaults.maxLineBytes);
  });
});
