/**
 * The JSONL audit file sink on real files: created 0600, appended to and
 * never rewritten, one bounded line per record, unsafe files refused, a full
 * queue reported by a gap record; and the pure redaction of arguments.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { chmod, chown, link, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { auditLine, redactArguments, secretNameSet } from '../../src/audit/auditLines.js';
import type { AuditCallRecord, AuditRecord } from '../../src/audit/auditRecord.js';
import { JsonlAuditSink } from '../../src/audit/JsonlAuditSink.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'audit-sink-'));
  dirs.push(dir);
  return dir;
}

function callRecord(n: number, extra: Partial<AuditCallRecord> = {}): AuditCallRecord {
  return { kind: 'call', at: new Date(0).toISOString(), op_id: `plug.probe.echo`, plugin_id: 'probe', outcome: 'ok', duration_ms: n, ...extra };
}

async function lines(path: string): Promise<AuditRecord[]> {
  const text = await readFile(path, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as AuditRecord);
}

async function opened(path: string, options?: Parameters<typeof JsonlAuditSink.open>[1]): Promise<JsonlAuditSink> {
  const sink = await JsonlAuditSink.open(path, options);
  if (sink.isErr()) throw sink.error;
  return sink.value;
}

describe('JsonlAuditSink', () => {
  it('creates the file 0600 and appends one JSON line per record, in order, keeping what was there', async () => {
    const path = join(await scratch(), 'audit.jsonl');
    const first = await opened(path);
    for (let n = 0; n < 3; n += 1) first.write(callRecord(n));
    expect((await first.close()).isOk()).toBe(true);
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    const second = await opened(path, { fsync: 'none' });
    for (let n = 3; n < 250; n += 1) second.write(callRecord(n));
    expect((await second.flush()).isOk()).toBe(true);
    await second.close();
    const records = await lines(path);
    expect(records.map((r) => (r as AuditCallRecord).duration_ms)).toEqual(Array.from({ length: 250 }, (_, n) => n));
  });

  it('refuses a symbolic link, a file others can read and a file with another hard link (AUDIT_FILE_UNSAFE), leaving them unchanged', async () => {
    const dir = await scratch();
    const target = join(dir, 'target');
    await writeFile(target, 'kept\n', { mode: 0o600 });
    await symlink(target, join(dir, 'link.jsonl'));
    const viaLink = await JsonlAuditSink.open(join(dir, 'link.jsonl'));
    expect(viaLink.isErr() && viaLink.error.code).toBe('AUDIT_FILE_UNSAFE');

    const open = join(dir, 'open.jsonl');
    await writeFile(open, '', { mode: 0o600 });
    await chmod(open, 0o644);
    const readable = await JsonlAuditSink.open(open);
    expect(readable.isErr() && readable.error.code).toBe('AUDIT_FILE_UNSAFE');
    expect(readable.isErr() && readable.error.details.reason).toMatch(/mode 644/);

    await link(target, join(dir, 'hard.jsonl'));
    const hard = await JsonlAuditSink.open(join(dir, 'hard.jsonl'));
    expect(hard.isErr() && hard.error.code).toBe('AUDIT_FILE_UNSAFE');
    expect(await readFile(target, 'utf8')).toBe('kept\n');
  });

  it('refuses a path in or below a folder another user owns or may write without the sticky bit, creating nothing (review R11 F8)', async () => {
    const dir = await scratch();
    const shared = join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    const inShared = await JsonlAuditSink.open(join(shared, 'audit.jsonl'));
    expect(inShared.isErr() && inShared.error.code).toBe('AUDIT_FILE_UNSAFE');
    expect(inShared.isErr() && inShared.error.details.reason).toMatch(/writable by others without the sticky bit \(mode 777\)/);
    // Deeper: a folder of this user's below the shared one can be renamed away by anyone.
    await mkdir(join(shared, 'mine'), { mode: 0o700 });
    const below = await JsonlAuditSink.open(join(shared, 'mine', 'audit.jsonl'));
    expect(below.isErr() && below.error.code).toBe('AUDIT_FILE_UNSAFE');
    expect(await readdir(join(shared, 'mine'))).toEqual([]);
    expect(await readdir(shared)).toEqual(['mine']);
    // The sticky bit (as /tmp has it) is enough.
    await chmod(shared, 0o1777);
    const sticky = await opened(join(shared, 'audit.jsonl'));
    await sticky.close();
    if (process.getuid?.() === 0) {
      // A folder another account owns (it may chmod it at will), even one only it may write.
      const theirs = join(dir, 'theirs');
      await mkdir(theirs, { mode: 0o755 });
      await chown(theirs, 65534, 65534);
      const foreign = await JsonlAuditSink.open(join(theirs, 'audit.jsonl'));
      expect(foreign.isErr() && foreign.error.details.reason).toMatch(/owned by uid 65534/);
      expect(await readdir(theirs)).toEqual([]);
    }
  });

  it('refuses a FIFO planted at the audit path (AUDIT_FILE_UNSAFE) instead of waiting forever for a reader', async () => {
    // Not a scratch() folder: the FIFO must outlive the afterEach hooks, which run before onTestFinished.
    const dir = await mkdtemp(join(tmpdir(), 'audit-fifo-'));
    const fifo = join(dir, 'planted.jsonl');
    execFileSync('mkfifo', ['-m', '600', fifo]);
    // Should the open block (the bug), a reader opened here lets the stuck thread-pool thread go when the test ends.
    onTestFinished(async () => {
      closeSync(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
      await rm(dir, { recursive: true, force: true });
    });
    const planted = await JsonlAuditSink.open(fifo);
    expect(planted.isErr() && planted.error.code).toBe('AUDIT_FILE_UNSAFE');
    expect(planted.isErr() && planted.error.details.reason).toMatch(/not a regular file/);
  }, 15_000);

  it('keeps every line within maxLineBytes: arguments go first, then long strings are cut', async () => {
    const path = join(await scratch(), 'audit.jsonl');
    const sink = await opened(path, { maxLineBytes: 1024 });
    sink.write(callRecord(1, { arguments: { blob: 'x'.repeat(5000) } }));
    sink.write(callRecord(2, { caller: { id: 'c'.repeat(5000) } }));
    sink.write(callRecord(3, { caller: { id: '\u0001'.repeat(5000), session: '\u0002'.repeat(5000) }, op_id: '\u0003'.repeat(5000) }));
    await sink.close();
    const text = await readFile(path, 'utf8');
    for (const line of text.trimEnd().split('\n')) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(1024);
    const [withArgs, longCaller, escaped] = (await lines(path)) as AuditCallRecord[];
    expect(withArgs).toMatchObject({ duration_ms: 1, arguments_omitted: 'too_large' });
    expect(withArgs?.arguments).toBeUndefined();
    expect(longCaller).toMatchObject({ duration_ms: 2, truncated: true, op_id: 'plug.probe.echo' });
    expect(longCaller?.caller?.id.length).toBeLessThan(5000);
    expect(escaped).toMatchObject({ kind: 'call', outcome: 'ok', truncated: true });
  });

  it('drops records past a full queue and says how many in a gap record once it writes again', async () => {
    const path = join(await scratch(), 'audit.jsonl');
    const sink = await opened(path, { maxQueuedRecords: 5 });
    for (let n = 0; n < 20; n += 1) sink.write(callRecord(n));
    // The writer takes the first record at once, so at most the queue's 5 wait beside it.
    const dropped = sink.dropped;
    expect(dropped).toBeGreaterThanOrEqual(14);
    await sink.flush();
    sink.write(callRecord(99));
    await sink.close();
    const records = await lines(path);
    expect(records.filter((r) => r.kind === 'call')).toHaveLength(20 - dropped + 1);
    expect(records.find((r) => r.kind === 'gap')).toMatchObject({ kind: 'gap', dropped });
    expect(sink.dropped).toBe(0);
  });

  it('refuses a line bound under 1024 bytes', async () => {
    const refused = await JsonlAuditSink.open(join(await scratch(), 'a.jsonl'), { maxLineBytes: 100 });
    expect(refused.isErr() && refused.error.code).toBe('HOST_INVALID_OPTIONS');
  });
});

describe('redactArguments', () => {
  const secrets = secretNameSet(['pin']);

  it('redacts secret fields at any depth, by exact name or suffix, and keeps look-alikes', () => {
    const args = {
      query: 'weather',
      max_tokens: 100,
      tokenizer: 'cl100k',
      password: 'hunter2',
      auth: { 'X-Api-Key': 'k', GithubToken: 't', nested: [{ client_secret: 's', keep: 1 }] },
      card: { pin: '1234' },
    };
    expect(redactArguments(args, secrets)).toEqual({
      query: 'weather',
      max_tokens: 100,
      tokenizer: 'cl100k',
      password: '[redacted]',
      auth: { 'X-Api-Key': '[redacted]', GithubToken: '[redacted]', nested: [{ client_secret: '[redacted]', keep: 1 }] },
      card: { pin: '[redacted]' },
    });
    expect(args.password).toBe('hunter2');
  });

  it('redacts secrets whose field name says nothing: header pairs, name/value objects, command-line flags and secrets inside strings', () => {
    const args = {
      headers: [
        ['Authorization', 'Bearer abc'],
        ['Accept', 'application/json'],
      ],
      har: [
        { name: 'X-Api-Key', value: 'k-1' },
        { name: 'Accept', value: 'text/plain' },
      ],
      argv: ['--token', 't-1', '--verbose', '-p', 'x', '--password=hunter2', '--max-tokens', '100'],
      curl: "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30' https://u:s3cret@api.example.com/v1?api_key=q-1&page=2",
      body: '{"user":"ann","password":"hunter3","max_tokens":5}',
      note: 'Bearer 0123456789abcdef0123 expired; tokenizer=cl100k',
      aws_secret_access_key: 'wJalr',
      credential: 'c-1',
    };
    const text = JSON.stringify(redactArguments(args, secrets));
    for (const secret of ['abc', 'k-1', 't-1', 'hunter2', 'eyJhbGciOiJIUzI1NiJ9', 's3cret', 'q-1', 'hunter3', '0123456789abcdef0123', 'wJalr', 'c-1']) {
      expect(text).not.toContain(secret);
    }
    expect(redactArguments(args, secrets)).toMatchObject({
      headers: [
        ['Authorization', '[redacted]'],
        ['Accept', 'application/json'],
      ],
      har: [
        { name: 'X-Api-Key', value: '[redacted]' },
        { name: 'Accept', value: 'text/plain' },
      ],
      argv: ['--token', '[redacted]', '--verbose', '-p', 'x', '--password=[redacted]', '--max-tokens', '100'],
      curl: "curl -H 'Authorization: Bearer [redacted]' https://u:[redacted]@api.example.com/v1?api_key=[redacted]&page=2",
      body: '{"user":"ann","password":"[redacted]","max_tokens":5}',
      note: 'Bearer [redacted] expired; tokenizer=cl100k',
    });
  });

  it('redacts a quoted value to its closing quote and a header value to the end of its line, whatever its scheme', () => {
    const args = {
      shell: 'password="correct horse battery staple" --verbose',
      json: '{"api_key": "abc def", "escaped": 1, "secret": "x\\" y", "page": 2}',
      header: 'Authorization: Token abcdef123456\nAccept: text/plain',
      setCookies: 'Cookie: a=1; session=SECRET1\r\nSet-Cookie: sid=SECRET2; Path=/',
      curl: "curl -H 'X-Api-Key: key one' -H 'Proxy-Authorization: Negotiate YII' https://example.com",
    };
    expect(redactArguments(args, secrets)).toEqual({
      shell: 'password="[redacted]" --verbose',
      json: '{"api_key": "[redacted]", "escaped": 1, "secret": "[redacted]", "page": 2}',
      header: 'Authorization: Token [redacted]\nAccept: text/plain',
      setCookies: 'Cookie: [redacted]\r\nSet-Cookie: [redacted]',
      curl: "curl -H 'X-Api-Key: [redacted]' -H 'Proxy-Authorization: Negotiate [redacted]' https://example.com",
    });
  });

  it('redacts a JSON array or object written after a secret name whole, and a value after `=>` or `:=` (review R11 F4)', () => {
    const args = {
      body: '{"user":"ann","password":["hunter4"],"credentials":{"user":"a","pass":"hunter5","n":[1,{"k":"}"}]},"page":2}',
      ruby: "{ password => 'hunter6', :api_key => \"hunter7\" }",
      go: 'token := "hunter8"; secret:=hunter9',
      unclosed: 'token: [hunter10, "]',
    };
    const text = JSON.stringify(redactArguments(args, secrets));
    for (const secret of ['hunter4', 'hunter5', 'hunter6', 'hunter7', 'hunter8', 'hunter9', 'hunter10']) expect(text).not.toContain(secret);
    expect(redactArguments(args, secrets)).toEqual({
      body: '{"user":"ann","password":[redacted],"credentials":[redacted],"page":2}',
      ruby: "{ password => '[redacted]', :api_key => \"[redacted]\" }",
      go: 'token := "[redacted]"; secret:=[redacted]',
      unclosed: 'token: [redacted]',
    });
  });

  it('redacts a secret after long runs of name characters and spaces in a string', () => {
    const prefix = `${'a-'.repeat(200_000)}=x ${' '.repeat(200_000)}`;
    const redacted = redactArguments({ long: `${prefix}password = hunter2` }, secrets) as { long: string };
    expect(redacted.long === `${prefix}password = [redacted]`).toBe(true);
  });

  it('cuts cycles instead of looping', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(redactArguments(cyclic, secrets)).toEqual({ a: 1, self: '[cut]' });
  });

  it('auditLine leaves a record that fits unchanged', () => {
    const record = callRecord(7);
    expect(auditLine(record, 1024)).toBe(JSON.stringify(record));
  });
});

// A write that fails part way (a full disk; here the file size limit, which also makes write(2) write what fits and
// then fail with EFBIG) leaves half a line. The sink runs in a child whose soft RLIMIT_FSIZE the test raises after the
// failure (prlimit on a process of one's own user), as a disk gets room again.
describe('JsonlAuditSink after a write that failed part way', () => {
  it('ends the half line before the next record, so the gap record and every later one parse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'audit-partial-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'audit.jsonl');
    const child = join(dir, 'sink.mts');
    const source = join(import.meta.dirname, '..', '..', 'src', 'audit', 'JsonlAuditSink.ts');
    await writeFile(
      child,
      `import { createInterface } from 'node:readline';
import { JsonlAuditSink } from ${JSON.stringify(source)};
const sink = (await JsonlAuditSink.open(process.argv[2], { maxLineBytes: 4096 }))._unsafeUnwrap();
let n = 0;
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'close') break;
  for (let i = 0; i < Number(line); i += 1) sink.write({ kind: 'call', at: new Date(0).toISOString(), op_id: 'r' + n++ + '-' + 'x'.repeat(700), outcome: 'ok', duration_ms: 0 });
  const flushed = await sink.flush();
  process.stdout.write((flushed.isOk() ? 'ok' : 'failed ' + flushed.error.message) + '\\n');
}
await sink.close();
`,
    );
    // 4 blocks of 512 bytes: one record fits, three more do not.
    const proc = spawn('sh', ['-c', 'ulimit -S -f 4 && exec "$0" --import tsx "$@"', process.execPath, child, path], { stdio: ['pipe', 'pipe', 'inherit'] });
    const answers = createLineReader(proc.stdout);
    const ask = async (line: string): Promise<string> => {
      proc.stdin.write(`${line}\n`);
      return answers();
    };
    expect(await ask('1')).toBe('ok');
    expect(await ask('3')).toMatch(/^failed .*EFBIG/);
    execFileSync('prlimit', ['--pid', String(proc.pid), '--fsize=unlimited:']);
    expect(await ask('1')).toBe('ok');
    proc.stdin.end('close\n');
    await new Promise((resolve) => proc.once('exit', resolve));

    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    const parsed = lines.map((line) => {
      try {
        return JSON.parse(line) as AuditRecord;
      } catch {
        return undefined;
      }
    });
    // r0; r1, which fitted whole; the half of r2 the failed write left, alone on its line; the gap record; r4.
    expect(parsed.map((r) => r?.kind)).toEqual(['call', 'call', undefined, 'gap', 'call']);
    expect(lines[2]).toMatch(/^\{"kind":"call".*"op_id":"r2-x+$/);
    expect((parsed[4] as AuditCallRecord).op_id).toMatch(/^r4-/);
  });
});

/** Reads `stream` line by line: each call resolves with the next line. */
function createLineReader(stream: NodeJS.ReadableStream): () => Promise<string> {
  let buffered = '';
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      const next = waiting.shift();
      if (next === undefined) lines.push(line);
      else next(line);
    }
  });
  return () => new Promise((resolve) => (lines.length > 0 ? resolve(lines.shift() ?? '') : waiting.push(resolve)));
}
