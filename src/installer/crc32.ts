import zlib from 'node:zlib';

/** The CRC-32 (ISO-HDLC, as zip uses it) of `data`, continued from `previous` (0 to start). */
export type Crc32 = (data: Uint8Array, previous?: number) => number;

const TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** The table-driven CRC-32 used where zlib has none (exported for the test that holds it to zlib's). */
export function tableCrc32(data: Uint8Array, previous = 0): number {
  let crc = ~previous >>> 0;
  for (const byte of data) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

/** zlib's own when this Node has it (20.15 and later), else a table-driven one for the older Node 20 releases the package supports. */
export const crc32: Crc32 = typeof (zlib as { crc32?: Crc32 }).crc32 === 'function' ? (zlib as unknown as { crc32: Crc32 }).crc32 : tableCrc32;
