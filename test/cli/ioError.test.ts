/**
 * A file system failure of the CLI's own work (here its scratch directory) is the host's one HOST_IO_ERROR shape
 * (issue 13, item 7): details exactly { operation, errno }, the message naming no path the CLI made up. Run in
 * process, since the temp directory that must be missing is also the one tsx needs to start a CLI subprocess.
 */
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

const savedTmpdir = process.env.TMPDIR;
afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
});

describe('validate without a usable temp directory', () => {
  it('fails with HOST_IO_ERROR whose details are the fixed ones', async () => {
    let stdout = '';
    const terminal = {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => true },
      stdin: Readable.from([]),
      env: {},
    };
    process.env.TMPDIR = join(REPO, 'no-such-temp-dir');
    // A package directory: it is checked in a scratch profile (a lone manifest needs no temp directory at all).
    const exit = await runCli(['validate', join(REPO, 'fixtures/plugins/hello'), '--json'], terminal, new AbortController().signal);
    const error = (JSON.parse(stdout) as { error: Record<string, unknown> }).error;
    expect({ exit, code: error.code, message: error.message, details: error.details }).toEqual({
      exit: 1,
      code: 'HOST_IO_ERROR',
      message: 'Running the validate command failed (ENOENT)',
      details: { operation: 'Running the validate command', errno: 'ENOENT' },
    });
  });
});
