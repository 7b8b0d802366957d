import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StderrRing } from '../../src/process/StderrRing.js';

describe('StderrRing', () => {
  it('keeps only the newest bytes, however much is pushed', () => {
    const ring = new StderrRing(16);
    for (let i = 0; i < 100; i++) ring.push(Buffer.from(`line ${i}\n`));
    expect(ring.tail()).toBe('line 98\nline 99\n');
    expect(Buffer.byteLength(ring.tail())).toBeLessThanOrEqual(16);
  });

  it('equals the last N bytes of everything written (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(fc.string({ unit: 'grapheme-ascii', maxLength: 40 })), (cap, chunks) => {
        const ring = new StderrRing(cap);
        for (const c of chunks) ring.push(Buffer.from(c));
        const all = chunks.join('');
        expect(ring.tail()).toBe(all.slice(Math.max(0, all.length - cap)));
      }),
    );
  });

  it('starts the tail at a character boundary when the cut splits a multi-byte character', () => {
    const ring = new StderrRing(4);
    ring.push(Buffer.from('aé€')); // 1 + 2 + 3 bytes: the newest 4 cut into 'é'
    expect(ring.tail()).toBe('€');
  });

  it('hands listeners whole lines split across chunks, without CR, and flushes the last partial line', () => {
    const ring = new StderrRing();
    const lines: string[] = [];
    ring.onLine((l) => lines.push(l));
    ring.push(Buffer.from('first pa'));
    ring.push(Buffer.from('rt\r\nsecond\nthi'));
    ring.push(Buffer.from('rd'));
    ring.flush();
    expect(lines).toEqual(['first part', 'second', 'third']);
  });

  it('caps the length of a line handed to listeners', () => {
    const ring = new StderrRing(1024, 8);
    const lines: string[] = [];
    ring.onLine((l) => lines.push(l));
    ring.push(Buffer.from(`${'y'.repeat(100)}\nshort\n`));
    expect(lines).toEqual(['yyyyyyyy [line truncated]', 'short']);
  });

  it('stops calling a listener once unsubscribed', () => {
    const ring = new StderrRing();
    const lines: string[] = [];
    const off = ring.onLine((l) => lines.push(l));
    ring.push(Buffer.from('one\n'));
    off();
    ring.push(Buffer.from('two\n'));
    expect(lines).toEqual(['one']);
  });
});
