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
    const buffer = Buffer.alloc(Math.min(size, limit) + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}
