import { describe, expect, it } from 'vitest';
import { resolveWriteDir } from '../../src/sandbox/writeDir.js';

describe('resolveWriteDir', () => {
  it('maps "" to the data directory and a relative path to its subtree', () => {
    expect(resolveWriteDir('/p/data/x', '')._unsafeUnwrap()).toBe('/p/data/x');
    expect(resolveWriteDir('/p/data/x', 'cache/db')._unsafeUnwrap()).toBe('/p/data/x/cache/db');
    expect(resolveWriteDir('/p/data/x', './cache/')._unsafeUnwrap()).toBe('/p/data/x/cache');
    expect(resolveWriteDir('/p/data/x', '.')._unsafeUnwrap()).toBe('/p/data/x');
  });

  it.each(['/etc', '../other', 'a/../../b', 'a/..', 'C:\\x', '\\\\server\\share', 'a\0b'])('refuses %j with PLUGIN_FS_WRITE_OUTSIDE_SANDBOX', (value) => {
    const error = resolveWriteDir('/p/data/x', value)._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_FS_WRITE_OUTSIDE_SANDBOX');
    expect(error.details).toEqual({ fs_write_dir: value });
  });
});
