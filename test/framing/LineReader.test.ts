import { EventEmitter } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineReader } from '../../src/framing/LineReader.js';

function collect(maxFrameBytes?: number) {
  const stream = new PassThrough();
  const lines: string[] = [];
  const oversize: number[] = [];
  const ends: (string | undefined)[] = [];
  new LineReader(stream, { onLine: (l) => lines.push(l), onOversize: (n) => oversize.push(n), onEnd: (p) => ends.push(p) }, maxFrameBytes);
  return { stream, lines, oversize, ends };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('LineReader', () => {
  it('splits lines across chunk boundaries, strips CR, keeps multi-byte characters whole', async () => {
    const { stream, lines, ends } = collect();
    const text = Buffer.from('{"a":"é€😀"}\r\n{"b":2}\n');
    for (let i = 0; i < text.length; i++) stream.write(text.subarray(i, i + 1));
    stream.end();
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual(['{"a":"é€😀"}', '{"b":2}']);
    expect(ends).toEqual([undefined]);
  });

  it('reports the half line left at EOF', async () => {
    const { stream, lines, ends } = collect();
    stream.end('{"id":1}\n{"id":');
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual(['{"id":1}']);
    expect(ends).toEqual(['{"id":']);
  });

  it('reports an oversize line once, when it crosses the cap, with the bytes seen so far', async () => {
    const { stream, lines, oversize } = collect(16);
    stream.write('ok\n');
    stream.write('x'.repeat(10));
    await tick();
    expect(oversize).toEqual([]);
    stream.write('y'.repeat(20));
    await tick();
    expect(oversize).toEqual([30]);
    stream.write('z'.repeat(100));
    await tick();
    expect(oversize).toEqual([30]);
    expect(lines).toEqual(['ok']);
  });

  it('discards the rest of an oversize line silently and resumes after its newline', async () => {
    const { stream, lines, oversize, ends } = collect(16);
    stream.write('x'.repeat(17));
    stream.write('y'.repeat(40));
    stream.write('z\nafter\n');
    stream.write('a'.repeat(20) + '\nlast\n');
    stream.end();
    await tick();
    expect(lines).toEqual(['after', 'last']);
    expect(oversize).toEqual([17, 20]);
    expect(ends).toEqual([undefined]);
  });

  it('counts a line exactly at the cap as a line, one byte more as oversize', async () => {
    const { stream, lines, oversize } = collect(8);
    stream.end(`${'a'.repeat(8)}\n${'b'.repeat(9)}\n`);
    await tick();
    expect(lines).toEqual(['a'.repeat(8)]);
    expect(oversize).toEqual([9]);
  });

  it('reports an endless line that never gets a newline, and no partial line at the end', async () => {
    const { stream, lines, oversize, ends } = collect(1024);
    for (let i = 0; i < 64; i++) stream.write(Buffer.alloc(512, 0x78));
    await tick();
    expect(oversize).toEqual([1536]);
    stream.end(Buffer.alloc(512, 0x78));
    await tick();
    expect(oversize).toEqual([1536]);
    expect(lines).toEqual([]);
    expect(ends).toEqual([undefined]);
  });

  it('calls no handler after dispose, even for the rest of the chunk being split', async () => {
    const stream = new PassThrough();
    const events: string[] = [];
    const reader: LineReader = new LineReader(
      stream,
      {
        onLine: (l) => events.push(`line:${l}`),
        onOversize: (n) => {
          events.push(`oversize:${n}`);
          reader.dispose();
        },
        onEnd: () => events.push('end'),
      },
      4,
    );
    stream.end('ok\ntoo long\nnext\n');
    await tick();
    expect(events).toEqual(['line:ok', 'oversize:8']);
  });

  it('reports each line, one oversize per over-long line with a count past the cap, and the end, whatever the chunking (property)', () => {
    const decode = (b: Buffer): string => (b.length > 0 && b[b.length - 1] === 0x0d ? b.subarray(0, -1) : b).toString('utf8');
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom('\n', '\r\n', 'é'), fc.integer({ min: 1, max: 90 }).map((n) => 'x'.repeat(n))), { maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 48 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 64 }),
        (parts, cuts, cap) => {
          const bytes = Buffer.from(parts.join(''), 'utf8');
          const stream = new EventEmitter();
          const lines: string[] = [];
          const oversize: number[] = [];
          const ends: (string | undefined)[] = [];
          new LineReader(stream as unknown as Readable, { onLine: (l) => lines.push(l), onOversize: (n) => oversize.push(n), onEnd: (p) => ends.push(p) }, cap);
          let at = 0;
          let largestChunk = 0;
          for (let i = 0; at < bytes.length; i++) {
            const size = cuts[i % cuts.length]!;
            largestChunk = Math.max(largestChunk, Math.min(size, bytes.length - at));
            stream.emit('data', bytes.subarray(at, at + size));
            at += size;
          }
          stream.emit('end');
          stream.emit('close');
          const expectedLines: string[] = [];
          const tooLong: number[] = [];
          const segments = bytes.length === 0 ? [] : bytes.toString('latin1').split('\n').map((l) => Buffer.from(l, 'latin1'));
          const rest = segments.pop();
          for (const line of segments) {
            if (line.length > cap) tooLong.push(line.length);
            else expectedLines.push(decode(line));
          }
          if (rest !== undefined && rest.length > cap) tooLong.push(rest.length);
          expect(lines).toEqual(expectedLines);
          expect(oversize).toHaveLength(tooLong.length);
          oversize.forEach((seen, i) => {
            expect(seen).toBeGreaterThan(cap);
            expect(seen).toBeLessThanOrEqual(Math.min(tooLong[i]!, cap + largestChunk));
          });
          const partial = rest !== undefined && rest.length > 0 && rest.length <= cap ? decode(rest) : undefined;
          expect(ends).toEqual([partial]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never holds more than the cap, whatever the chunking (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 40 }), fc.integer({ min: 1, max: 32 }), (chunks, cap) => {
        const stream = new PassThrough();
        const lines: string[] = [];
        const reader = new LineReader(stream, { onLine: (l) => lines.push(l) }, cap);
        for (const c of chunks) (reader as unknown as { push(b: Buffer): void }).push(Buffer.from(c));
        for (const l of lines) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(cap * 3);
        const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
        const expected = all.toString('latin1').split('\n').slice(0, -1).filter((l) => Buffer.byteLength(l, 'latin1') <= cap);
        expect(lines.length).toBe(expected.length);
      }),
      { numRuns: 500 },
    );
  });
});
