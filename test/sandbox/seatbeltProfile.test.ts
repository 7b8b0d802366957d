import { describe, expect, it } from 'vitest';
import type { SandboxLayout } from '../../src/sandbox/SandboxLayout.js';
import { seatbeltProfile } from '../../src/sandbox/seatbeltProfile.js';

const layout: SandboxLayout = {
  network: false,
  system: [{ kind: 'dir', path: '/usr' }, { kind: 'dir', path: '/System' }],
  readOnly: ['/opt/node'],
  installRoot: '/Users/me/.host/plugins/p',
  writeDir: '/Users/me/.host/data/p',
  masksOutside: [{ path: '/Users/me/.host', kind: 'dir' }],
  masksInside: [{ path: '/Users/me/.host/plugins/p/.netrc', kind: 'file' }],
  cwd: '/Users/me/.host/plugins/p',
};

describe('seatbeltProfile (text only: enforcement needs macOS)', () => {
  it('denies by default and allows writes only under writeDir', () => {
    const profile = seatbeltProfile(layout);
    expect(profile.startsWith('(version 1)\n(deny default)\n')).toBe(true);
    expect(profile).toContain('(allow file-write*\n  (subpath "/Users/me/.host/data/p")\n  (literal "/dev/null"))');
    expect(profile.match(/allow file-write\*/g)).toHaveLength(1);
  });

  it('allows reading and executing system paths, read-only paths and the install root', () => {
    const profile = seatbeltProfile(layout);
    expect(profile).toContain('(allow process-exec\n  (subpath "/usr")\n  (subpath "/System")\n  (subpath "/opt/node")\n  (subpath "/Users/me/.host/plugins/p"))');
    expect(profile).toMatch(/\(allow file-read\*\n(\s+\(subpath "[^"]+"\)\n)*\s+\(subpath "\/Users\/me\/\.host\/plugins\/p"\)/);
  });

  it('grants no network (TCP, UDP, DNS or Unix sockets) unless network is true', () => {
    expect(seatbeltProfile(layout)).not.toMatch(/network|system-socket|trustd/);
    const on = seatbeltProfile({ ...layout, network: true });
    expect(on).toContain('(allow network*)');
    expect(on).toContain('(global-name "com.apple.trustd.agent")');
  });

  it('denies secret and hidden paths last, so they win over the allows', () => {
    const profile = seatbeltProfile(layout);
    const deny = '(deny file-read* file-write* process-exec\n  (subpath "/Users/me/.host")\n  (literal "/Users/me/.host/plugins/p/.netrc"))';
    expect(profile.trimEnd().endsWith(deny)).toBe(true);
  });

  it('does not grant keychain access', () => {
    expect(seatbeltProfile({ ...layout, network: true })).not.toContain('SecurityServer');
  });

  it('escapes quotes and backslashes in paths', () => {
    expect(seatbeltProfile({ ...layout, writeDir: '/tmp/a"b\\c' })).toContain('(subpath "/tmp/a\\"b\\\\c")');
  });
});
