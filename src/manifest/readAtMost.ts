/**
 * Reading a file a package ships without holding more of it than the
 * caller's limit: a package may carry a manifest, package.json or
 * pyproject.toml of hundreds of megabytes (the package limits allow it),
 * and reading it whole before looking at its size would hold all of it.
 */
import { open } from 'node:fs/promises';

/**
 * The first bytes of the file at `path`, at most `limit` + 1 of them: a
 * result longer than `limit` means the file is larger than the limit.
 * Rejects as `open` and `read` do (a missing file: ENOENT).
 */
export async function readAtMost(path: string, limit: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    let buffer = Buffer.alloc(Math.min(size, limit) + 1);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled < buffer.length) continue;
      if (buffer.length > limit) break;
      // The file grew after its size was read: read on to its end or past the limit, never stopping short as if whole.
      const grown = Buffer.alloc(Math.min(buffer.length * 2, limit + 1));
      buffer.copy(grown, 0, 0, filled);
      buffer = grown;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}
