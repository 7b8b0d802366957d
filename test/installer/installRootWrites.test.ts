/** Which refused writes {@link refusedInstallRootWrite} reads as a write into the plugin's own install root. */
import { describe, expect, it } from 'vitest';
import { refusedInstallRootWrite } from '../../src/installer/installRootWrites.js';

const ROOT = '/profile/plugins/x/1.0.0';

describe('refusedInstallRootWrite', () => {
  it("reads Node's and Python's refused writes under the root", () => {
    expect(refusedInstallRootWrite(`Error: EROFS: read-only file system, open '${ROOT}/dist/memory.jsonl'`, [ROOT])).toBe(`${ROOT}/dist/memory.jsonl`);
    expect(refusedInstallRootWrite(`OSError: [Errno 30] Read-only file system: '${ROOT}/lib/cache.db'`, [ROOT])).toBe(`${ROOT}/lib/cache.db`);
    expect(refusedInstallRootWrite(`EACCES: permission denied, copyfile '/tmp/a.node' -> '${ROOT}/build/a.node'`, ['/elsewhere', ROOT])).toBe(`${ROOT}/build/a.node`);
    // Node's mkdir(path, { recursive: true }) under a read-only folder reports the folder it could not make as ENOENT.
    expect(refusedInstallRootWrite(`Error: ENOENT: no such file or directory, mkdir '${ROOT}/.claude-flow/policy'`, [ROOT])).toBe(`${ROOT}/.claude-flow/policy`);
  });

  it('reads a copy out of the root, a write elsewhere and a sibling directory as none', () => {
    expect(refusedInstallRootWrite(`EACCES: permission denied, copyfile '${ROOT}/a.node' -> '/usr/lib/a.node'`, [ROOT])).toBeUndefined();
    expect(refusedInstallRootWrite("EROFS: read-only file system, open '/usr/lib/x'", [ROOT])).toBeUndefined();
    expect(refusedInstallRootWrite(`EROFS: read-only file system, open '${ROOT}-other/x'`, [ROOT])).toBeUndefined();
    expect(refusedInstallRootWrite(`ENOENT: no such file or directory, open '${ROOT}/x'`, [ROOT])).toBeUndefined();
  });
});
