import { describe, expect, it } from 'vitest';
import { ioError } from '../../src/errors/ioError.js';

const errno = (code: string, message: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code });

describe('ioError', () => {
  it('carries exactly operation, path and errno in its details', () => {
    const e = ioError('Reading', '/home/u/.profile/plugins.lock', errno('EIO', 'EIO: i/o error, read'));
    expect(e.code).toBe('HOST_IO_ERROR');
    expect(e.details).toEqual({ operation: 'Reading', path: '/home/u/.profile/plugins.lock', errno: 'EIO' });
    expect(e.retryable).toBe(true);
  });

  it('names the path it was given, not the scratch path inside the cause message', () => {
    const cause = errno('ENOSPC', "ENOSPC: no space left on device, open '/tmp/.stage-1234/pkg/main.js'");
    const e = ioError('Staging', '/home/u/my-plugin', cause);
    expect(e.message).toBe('Staging /home/u/my-plugin failed (ENOSPC)');
    expect(e.message).not.toContain('.stage-1234');
    expect(e.cause).toBe(cause);
  });

  it('keeps the message of a cause without an error code, and leaves path and errno out when unknown', () => {
    const e = ioError('Collecting install leftovers', undefined, new Error('secret store unavailable'));
    expect(e.message).toBe('Collecting install leftovers failed: secret store unavailable');
    expect(e.details).toEqual({ operation: 'Collecting install leftovers' });
  });

  it('is not retryable when the path is missing or forbidden', () => {
    for (const code of ['ENOENT', 'ENOTDIR', 'EACCES', 'EPERM']) expect(ioError('Opening', '/x', errno(code, code)).retryable).toBe(false);
  });
});
