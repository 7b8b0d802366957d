import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { tableCrc32 } from '../../src/installer/crc32.js';

describe('tableCrc32, the CRC-32 used on Node releases without zlib.crc32', () => {
  it('matches zlib.crc32 on whole buffers and when continued chunk by chunk', () => {
    const data = randomBytes(100_000);
    expect(tableCrc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(tableCrc32(data)).toBe(zlib.crc32(data));
    let running = 0;
    for (let at = 0; at < data.length; at += 7_777) running = tableCrc32(data.subarray(at, at + 7_777), running);
    expect(running).toBe(zlib.crc32(data));
    expect(tableCrc32(Buffer.alloc(0))).toBe(0);
  });
});
