import { PassThrough } from 'node:stream';
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

  it('discards an oversize line, reports its size and resumes at the next newline', async () => {
    const { stream, lines, oversize } = collect(16);
    stream.write('ok\n');
    stream.write('x'.repeat(10));
    stream.write('y'.repeat(20));
    stream.write('z\nafter\n');
    stream.end();
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual(['ok', 'after']);
    expect(oversize).toEqual([31]);
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
