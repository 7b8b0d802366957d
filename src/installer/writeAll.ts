import type { FileHandle } from 'node:fs/promises';

/** Writes every byte of `chunk`, looping over short writes. */
export async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset, null);
    offset += bytesWritten;
  }
}
