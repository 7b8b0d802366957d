import { describe, expect, it } from 'vitest';
import shellInterpreters from '../../etc/shell-interpreters.json' with { type: 'json' };
import { isNodeName, isShellName } from '../../src/binding/shells.js';

// The denylist as it stood when it moved from code into etc/: every one of
// these must still be refused, so the move cannot have dropped a name.
const SHELLS_BEFORE_THE_MOVE = [
  'sh', 'bash', 'rbash', 'zsh', 'dash', 'ash', 'ksh', 'ksh93', 'mksh', 'pdksh', 'yash',
  'fish', 'csh', 'tcsh', 'busybox', 'cmd', 'command', 'powershell', 'pwsh',
];

describe('shell interpreter denylist (etc/shell-interpreters.json)', () => {
  it('holds exactly the names the binding refused before the move', () => {
    expect([...shellInterpreters.names].sort()).toEqual([...SHELLS_BEFORE_THE_MOVE].sort());
  });

  it.each(SHELLS_BEFORE_THE_MOVE)('refuses %s by bare name and by path', (name) => {
    expect(isShellName(name)).toBe(true);
    expect(isShellName(`/usr/local/bin/${name}`)).toBe(true);
  });

  it.each(['BASH', 'Zsh', 'cmd.exe', 'PowerShell.EXE', 'pwsh.ps1', 'C:\\Windows\\System32\\cmd.exe', 'busybox.com'])(
    'matches case-insensitively and without a Windows program suffix: %s',
    (path) => {
      expect(isShellName(path)).toBe(true);
    },
  );

  it.each(['node', 'python3', 'bashful', 'shellcheck', 'fish-helper', 'sh.py', '/bin/sh/tool', ''])('does not refuse %j', (path) => {
    expect(isShellName(path)).toBe(false);
  });

  it('leaves the Node.js recognition beside it unchanged', () => {
    expect(isNodeName('/usr/bin/node')).toBe(true);
    expect(isNodeName('nodejs18')).toBe(true);
    expect(isNodeName('bash')).toBe(false);
  });
});
