/**
 * The IPC channel between the host and a plugin's egress bridge. The bridge
 * is the plugin's parent and runs as its user, so (1) the sandbox refuses
 * the calls that reach into another process (pidfd_getfd, ptrace,
 * process_vm_readv/writev, kcmp), and (2) the host's end survives whatever
 * arrives on the channel anyway: a line that is not JSON, or one that never
 * ends, kills the peer instead of throwing in the host's read callback.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnChild } from '../../src/process/spawnChild.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { PYTHON3_REAL } from '../support/python.js';

const base = mkdtempSync(join(tmpdir(), 'bridge-channel-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

// Tries each call on the bridge (its parent) and prints the outcomes as JSON.
const REACH_INTO_PARENT = `
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
parent = os.getppid()
channel = int(dict(e.split(b'=', 1) for e in open(f'/proc/{parent}/environ', 'rb').read().split(b'\\0') if b'=' in e).get(b'NODE_CHANNEL_FD', b'3'))
def outcome(result):
    return 'ok' if result >= 0 else os.strerror(ctypes.get_errno())
pidfd = libc.syscall(434, parent, 0)
class IoVec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
buffer = ctypes.create_string_buffer(8)
local = IoVec(ctypes.cast(buffer, ctypes.c_void_p), 8)
remote = IoVec(ctypes.c_void_p(0x400000), 8)
print(json.dumps({
    'pidfd_getfd': outcome(libc.syscall(438, pidfd, channel, 0)),
    'ptrace': outcome(libc.ptrace(16, parent, None, None)),
    'process_vm_readv': outcome(libc.process_vm_readv(parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)),
    'process_vm_writev': outcome(libc.process_vm_writev(parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)),
    'kcmp': outcome(libc.syscall(312, os.getpid(), parent, 0, 0, 0)),
}), flush=True)
`;

describe('the egress bridge channel', () => {
  it('refuses a plugin behind the bridge every call that reaches into the bridge', async () => {
    const root = join(base, 'plugin');
    mkdirSync(join(root, 'data'), { recursive: true });
    const spawner = (await SandboxSpawner.create({ egressResolver: { resolve: () => Promise.reject(new Error('none')) } }))._unsafeUnwrap();
    const plugin = (
      await spawner.spawn({
        executable: unverifiedCommand([PYTHON3_REAL, '-c', REACH_INTO_PARENT], root, [dirname(dirname(PYTHON3_REAL))]),
        env: {},
        network: false,
        egress: ['api.test'],
        writeDir: join(root, 'data'),
        hiddenPaths: [],
        pluginId: 'reacher',
      })
    )._unsafeUnwrap();
    plugin.stdin.end();
    let out = '';
    plugin.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exit = await plugin.exited;
    expect(out, `${exit.description}: ${plugin.stderrTail()}`).not.toBe('');
    expect(JSON.parse(out)).toEqual({
      pidfd_getfd: 'Operation not permitted',
      ptrace: 'Operation not permitted',
      process_vm_readv: 'Operation not permitted',
      process_vm_writev: 'Operation not permitted',
      kcmp: 'Operation not permitted',
    });
  });

  // A peer writing straight to the channel, as a plugin holding the bridge's descriptor would.
  async function peerWriting(program: string): Promise<{ exit: string; connections: number }> {
    const root = join(base, 'peer');
    mkdirSync(root, { recursive: true });
    let connections = 0;
    const child = (
      await spawnChild(
        unverifiedCommand([PYTHON3_REAL, '-c', program], root),
        { command: PYTHON3_REAL, args: ['-c', program], env: {}, cwd: root, onConnection: (socket) => { connections++; socket.destroy(); } },
        { tree: 'process-group', stdinGraceMs: 0, termGraceMs: 1_000 },
      )
    )._unsafeUnwrap();
    child.stdin.end();
    return { exit: (await child.exited).description, connections };
  }

  const WRITE_TO_CHANNEL = (payload: string): string =>
    `import os, time\nfd = int(os.environ['NODE_CHANNEL_FD'])\n${payload}\ntime.sleep(30)\n`;

  it('kills a peer that sends a line that is not JSON, and the host goes on', async () => {
    const { exit } = await peerWriting(WRITE_TO_CHANNEL(`os.write(fd, b'{"cmd": not json}\\n')`));
    expect(exit).toMatch(/SIGKILL/);
  });

  it('kills a peer whose line grows past the bound without an end, long before it is large', async () => {
    const { exit } = await peerWriting(WRITE_TO_CHANNEL(`chunk = b'"' + b'a' * 65535\nfor _ in range(64): os.write(fd, chunk)`));
    expect(exit).toMatch(/SIGKILL/);
  });
});
