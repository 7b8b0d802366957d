import { chmodSync, closeSync, copyFileSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { diagnoseExecutable } from '../../src/process/diagnoseExecutable.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';

const dir = mkdtempSync(join(tmpdir(), 'diagnose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function elfHeader(machine: number): Buffer {
  const head = Buffer.alloc(64);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(head);
  head.writeUInt16LE(2, 16); // ET_EXEC
  head.writeUInt16LE(machine, 18);
  return head;
}

function file(name: string, content: Buffer | string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  chmodSync(path, mode);
  return path;
}

describe('diagnoseExecutable', () => {
  it('accepts a real executable of this host', () => {
    expect(diagnoseExecutable(unverifiedCommand([process.execPath], dir))).toBeUndefined();
  });

  it('reports a missing file with its errno', () => {
    const error = diagnoseExecutable(unverifiedCommand([join(dir, 'missing')], dir));
    expect(error?.code).toBe('PLUGIN_SPAWN_FAILED');
    expect(error?.details).toMatchObject({ path: join(dir, 'missing'), errno: 'ENOENT' });
  });

  it('reports missing execute permission with the mode bits', () => {
    const error = diagnoseExecutable(unverifiedCommand([file('plain', elfHeader(62), 0o644)], dir));
    expect(error?.message).toContain('not executable (mode 0644)');
    expect(error?.details).toMatchObject({ mode: '0644', errno: 'EACCES' });
  });

  it('names the architecture of a binary built for another machine', () => {
    const foreign = process.arch === 'arm64' ? 62 : 183;
    const error = diagnoseExecutable(unverifiedCommand([file('foreign', elfHeader(foreign), 0o755)], dir));
    expect(error?.details).toMatchObject({ architecture: foreign === 62 ? 'x86-64' : 'aarch64', elf_machine: foreign, errno: 'ENOEXEC' });
    expect(error?.message).toMatch(/is built for (x86-64|aarch64), but this host is/);
  });

  it('reports a file that is neither ELF nor a script', () => {
    const error = diagnoseExecutable(unverifiedCommand([file('text', 'hello\n', 0o755)], dir), undefined, 'linux');
    expect(error?.details).toMatchObject({ errno: 'ENOEXEC' });
  });

  it('reports a script whose interpreter does not exist', () => {
    const error = diagnoseExecutable(unverifiedCommand([file('script', '#!/nonexistent/python3 -u\nprint(1)\n', 0o755)], dir));
    expect(error?.details).toMatchObject({ interpreter: '/nonexistent/python3', errno: 'ENOENT' });
  });

  it('inspects the inherited descriptor behind /proc/self/fd/N', () => {
    const copy = join(dir, 'node-copy');
    copyFileSync(process.execPath, copy);
    const badFd = openSync(file('fd-target', 'not a program', 0o644), 'r');
    const goodFd = openSync(copy, 'r');
    try {
      const viaFd = (fd: number) => ({ ...unverifiedCommand(['/proc/self/fd/3'], dir), inheritFds: [fd] });
      expect(diagnoseExecutable(viaFd(badFd))?.details).toMatchObject({ mode: '0644' });
      chmodSync(copy, 0o755);
      expect(diagnoseExecutable(viaFd(goodFd))).toBeUndefined();
    } finally {
      closeSync(badFd);
      closeSync(goodFd);
    }
  });

  it('adds the errno of a failed spawn', () => {
    const error = diagnoseExecutable(unverifiedCommand(['no-such-program-anywhere'], dir), Object.assign(new Error('spawn no-such-program-anywhere ENOENT'), { code: 'ENOENT' }));
    expect(error?.details).toMatchObject({ errno: 'ENOENT' });
  });
});
