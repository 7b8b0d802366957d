/**
 * A shipped wheel's METADATA is read line by line as pip reads it (review s33 R9 F5): Python's email parser ends a
 * line at CR LF, LF or a lone CR. A METADATA whose lines ended with CR alone was one long header to the direct
 * reference check, which saw no Requires-Dist, while pip followed `bdep @ file:///…` and ran that project's build
 * backend (ran it: its RuntimeError came back in pip's stderr tail).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { refuseDirectReferences, requiresDist } from '../../src/installer/wheelRequirements.js';

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

// A wheel whose METADATA lines end with `eol`, written by Python's zipfile.
const WRITER = `
import sys, zipfile
path, eol = sys.argv[1], sys.argv[2]
meta = eol.join(['Metadata-Version: 2.1', 'Name: mcp', 'Version: 1.0.0', 'Requires-Dist: bdep @ file:///usr/local/share/bdep']) + eol
with zipfile.ZipFile(path, 'w') as z:
    z.writestr('mcp/__init__.py', '')
    z.writestr('mcp-1.0.0.dist-info/METADATA', meta)
`;

describe('requiresDist', () => {
  it('ends lines at CR LF, LF and a lone CR, as pip does', () => {
    const requirement = 'bdep @ file:///usr/local/share/bdep';
    for (const eol of ['\n', '\r\n', '\r']) {
      expect(requiresDist(['Metadata-Version: 2.1', 'Name: mcp', `Requires-Dist: ${requirement}`, '', 'Requires-Dist: body @ x'].join(eol))).toEqual([requirement]);
    }
    expect(requiresDist('Name: mcp\rRequires-Dist: a>=1\r\tand more\r\rRequires-Dist: b @ x')).toEqual(['a>=1 and more']);
    expect(requiresDist('Name: mcp\nRequires-Dist: c @ file:///x\u2028y\n')).toEqual(['c @ file:///x\u2028y']);
  });

  it('refuses a shipped wheel whose METADATA lines end with CR alone', async () => {
    const root = await mkdtemp(join(tmpdir(), 'wheel-cr-'));
    dirs.push(root);
    await mkdir(join(root, 'wheels'));
    await run('/usr/bin/python3', ['-c', WRITER, join(root, 'wheels', 'mcp-1.0.0-py3-none-any.whl'), '\r']);
    const refused = await refuseDirectReferences(root, ['wheels']);
    expect(refused.isErr() && refused.error.details).toMatchObject({ reason: 'direct_reference', requirement: 'bdep @ file:///usr/local/share/bdep' });
  });
});
