/** Which refused writes {@link refusedWriteWithin} reads as a write into the plugin's own install root. */
import { describe, expect, it } from 'vitest';
import { refusedWriteWithin } from '../../src/installer/installRootWrites.js';

const ROOT = '/profile/plugins/x/1.0.0';

describe('refusedWriteWithin', () => {
  it("reads Node's and Python's refused writes under the root", () => {
    expect(refusedWriteWithin(`Error: EROFS: read-only file system, open '${ROOT}/dist/memory.jsonl'`, [ROOT])).toBe(`${ROOT}/dist/memory.jsonl`);
    expect(refusedWriteWithin(`OSError: [Errno 30] Read-only file system: '${ROOT}/lib/cache.db'`, [ROOT])).toBe(`${ROOT}/lib/cache.db`);
    expect(refusedWriteWithin(`EACCES: permission denied, copyfile '/tmp/a.node' -> '${ROOT}/build/a.node'`, ['/elsewhere', ROOT])).toBe(`${ROOT}/build/a.node`);
    // Node's mkdir(path, { recursive: true }) under a read-only folder reports the folder it could not make as ENOENT.
    expect(refusedWriteWithin(`Error: ENOENT: no such file or directory, mkdir '${ROOT}/.claude-flow/policy'`, [ROOT])).toBe(`${ROOT}/.claude-flow/policy`);
  });

  it('reads a copy out of the root, a write elsewhere and a sibling directory as none', () => {
    expect(refusedWriteWithin(`EACCES: permission denied, copyfile '${ROOT}/a.node' -> '/usr/lib/a.node'`, [ROOT])).toBeUndefined();
    expect(refusedWriteWithin("EROFS: read-only file system, open '/usr/lib/x'", [ROOT])).toBeUndefined();
    expect(refusedWriteWithin(`EROFS: read-only file system, open '${ROOT}-other/x'`, [ROOT])).toBeUndefined();
    expect(refusedWriteWithin(`ENOENT: no such file or directory, open '${ROOT}/x'`, [ROOT])).toBeUndefined();
  });
});
