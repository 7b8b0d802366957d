/**
 * The testing kit reports a scratch profile it cannot create as the host's one HOST_IO_ERROR shape (issue 13,
 * item 7): details are exactly { operation, path, errno }, path being the temp directory the author controls.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startPlugin, validatePluginDir } from '../../src/testing/index.js';
import { REPO } from '../cli/cliHarness.js';

const savedTmpdir = process.env.TMPDIR;
afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
});

describe('a scratch profile the kit cannot create', () => {
  it('fails startPlugin and validatePluginDir with HOST_IO_ERROR and the fixed details', async () => {
    const missing = join(REPO, 'no-such-temp-dir');
    process.env.TMPDIR = missing;
    const plugin = join(REPO, 'examples/plugin-author/plugin');
    for (const result of [await startPlugin(plugin), await validatePluginDir(plugin)]) {
      const error = result._unsafeUnwrapErr();
      expect({ code: error.code, details: error.details, retryable: error.retryable }).toEqual({
        code: 'HOST_IO_ERROR',
        details: { operation: 'Creating a scratch profile directory in', path: missing, errno: 'ENOENT' },
        retryable: false,
      });
    }
  });
});
