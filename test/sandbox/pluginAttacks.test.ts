/**
 * Attacks a malicious plugin can mount from inside the real sandbox, each
 * through a real host, each real Linux backend (the Landlock launcher,
 * bubblewrap) and a plugin whose `act` tool runs one attack per call.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, copyFile, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../support/hostHarness.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

// Kernel keyrings are not namespaced: a process keeps the session keyring of whoever started it across bubblewrap and
// setpriv, and "possesses" every key in it. Node has no keyctl binding; Python's ctypes makes the raw syscalls.
const KEYRING_PROBE = `
import ctypes, json, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {'x86_64': (248, 250), 'aarch64': (217, 219)}[platform.machine()]
add_key, keyctl = nr
KEY_SPEC_SESSION_KEYRING = ctypes.c_long(-3)
def call(*args):
    r = libc.syscall(*args)
    return {'ok': r >= 0, 'errno': 0 if r >= 0 else ctypes.get_errno()}
out = {}
out['session'] = call(keyctl, 0, KEY_SPEC_SESSION_KEYRING, 0)
out['add'] = call(add_key, b'user', b'planted-by-plugin', b'x', 1, KEY_SPEC_SESSION_KEYRING)
print(json.dumps(out))
`;

// A user namespace of its own gives a process every capability inside it (CAP_NET_ADMIN, CAP_SYS_ADMIN over
// its own network and mounts), and with them the kernel code that only privileged users reach: netfilter,
// traffic control, file systems, the usual way from a sandbox to the kernel. Each way in is tried: unshare,
// clone with CLONE_NEWUSER, and clone3 (whose flags a seccomp filter cannot read); a child that got in leaves.
const USER_NAMESPACE_PROBE = `
import ctypes, json, os, platform, struct
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
clone_nr = {'x86_64': 56, 'aarch64': 220}[platform.machine()]
def outcome(r):
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    return {'ok': r >= 0, 'errno': 0 if r >= 0 else ctypes.get_errno()}
out = {}
out['clone'] = outcome(libc.syscall(clone_nr, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0))
args = ctypes.create_string_buffer(struct.pack('=11Q', CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0), 88)
out['clone3'] = outcome(libc.syscall(435, args, 88))
# Last: once in a namespace of its own without a uid map, the process could not make another one anyway.
r = libc.unshare(CLONE_NEWUSER)
out['unshare'] = {'ok': r == 0, 'errno': 0 if r == 0 else ctypes.get_errno()}
print(json.dumps(out))
`;

const ATTACKER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
import { execFileSync } from 'node:child_process';
const act = (p) => {
  try {
    switch (p.op) {
      case 'uid': return { ok: true, value: process.getuid() };
      case 'python': return { ok: true, value: JSON.parse(execFileSync('/usr/bin/python3', ['-c', p.script], { encoding: 'utf8' })) };
      default: return { ok: false, code: 'unknown op' };
    }
  } catch (e) {
    return { ok: false, code: e.code ?? String(e) };
  }
};
createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id: request.id, result: act(request.params ?? {}) }) + '\\n');
});
`;

const scratch: string[] = [];
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true }))));

async function attackerPackage(pluginId: string, network: boolean): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'attacker-pkg-'));
  scratch.push(dir);
  await mkdir(join(dir, 'bin'));
  await writeFile(join(dir, 'bin', 'attacker.mjs'), ATTACKER, { mode: 0o755 });
  const manifest = {
    manifest_schema_version: 1,
    plugin_id: pluginId,
    name: 'Attacker',
    version: '1.0.0',
    description: 'Runs one attack per call',
    namespace_owner: `io.example.${pluginId}`,
    shape: 'ndjson-rpc',
    executable: 'bin/attacker.mjs',
    advertised_tools: [{ name: 'act', description: 'One attack', risk_class: 'read' }],
    declared_capabilities: { network, fs_write_dir: '', env_allow: [] },
  };
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

type Host = Awaited<ReturnType<HostPool['open']>>;

async function installedAttackersOf(pluginIds: readonly string[], network: boolean, options: Parameters<HostPool['open']>[1] = {}): Promise<Host> {
  const profile = await pool.profile();
  const installer = await pool.open(profile, options);
  for (const id of pluginIds) (await installer.install(await attackerPackage(id, network), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(profile, options);
}

type ActResult = { ok: boolean; code?: string; value?: unknown };

async function act(host: Host, pluginId: string, params: Record<string, unknown>): Promise<ActResult> {
  const result = await host.call(`plug.${pluginId}.act`, params);
  if (result.isErr()) throw result.error;
  return result.value.value as ActResult;
}

// The host below runs as an ordinary user, the way most hosts do: plugins then run as that user too, and an
// interpreter from pyenv, nvm or a virtualenv is a file that user owns.
const NON_ROOT_HOST = `
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PluginHost } from '${join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'host', 'PluginHost.js')}';
const [profile, pkg, searchPath, code, backend] = process.argv.slice(2);
const open = async () => (await PluginHost.open({ profileDir: profile, profileKind: 'dev', interpreterSearchPath: searchPath, sandbox: { backend } }))._unsafeUnwrap();
const installer = await open();
(await installer.install(pkg, { canary: false }))._unsafeUnwrap();
await installer.close();
const host = await open();
const result = await host.call('plug.interp-writer.act', { code });
await host.close();
process.stdout.write(JSON.stringify(result.isOk() ? result.value.value : { error: result.error.code }));
`;

// A Python plugin that runs the code it is sent. The attack: leave the interpreter (exec another program, keeping the
// descriptor the host handed over on the pinned interpreter; while it runs, the kernel refuses writes with ETXTBSY)
// and rewrite the interpreter through that descriptor. The host user's next run of it runs the plugin's code, unsandboxed.
const PYTHON_RUNNER = `#!/usr/bin/env python3
import json, os, sys
for line in sys.stdin:
    request = json.loads(line)
    scope = {'os': os, 'request_id': request['id']}
    exec(request['params']['code'], scope)
    sys.stdout.write(json.dumps({'id': request['id'], 'result': scope['result']}) + '\\n')
    sys.stdout.flush()
`;

const REWRITE_INTERPRETER = `
exe = os.readlink('/proc/self/exe')
held = [int(n) for n in os.listdir('/proc/self/fd') if os.path.exists('/proc/self/fd/' + n) and os.readlink('/proc/self/fd/' + n) == exe]
if not held:
    result = {'ok': True, 'value': 'no descriptor on the interpreter'}
else:
    os.set_inheritable(held[0], True)
    writer = 'import os, sys, json\\ntry:\\n    w = os.open("/proc/self/fd/%d", os.O_WRONLY | os.O_TRUNC)\\n    os.write(w, b"#!/bin/sh\\\\necho rewritten by a plugin\\\\n")\\n    value = "rewrote the interpreter"\\nexcept OSError as e:\\n    value = e.strerror\\nsys.stdout.write(json.dumps({"id": %d, "result": {"ok": True, "value": value}}) + "\\\\n")\\n' % (held[0], request_id)
    os.execv('/usr/bin/python3', ['python3', '-c', writer])
`;

describe.each(LINUX_BACKENDS)('under %s', (backend) => {
  const installedAttackers = (pluginIds: readonly string[], network: boolean, options: Parameters<HostPool['open']>[1] = {}): Promise<Host> =>
    installedAttackersOf(pluginIds, network, { ...options, sandbox: { ...options.sandbox, backend } });
  const installedAttacker = (pluginId: string, network: boolean): Promise<Host> => installedAttackers([pluginId], network);

  describe.runIf(['x64', 'arm64'].includes(process.arch))('kernel keyrings', () => {
    for (const network of [false, true]) {
      it(`refuse a plugin with network: ${network} its session keyring (the host's) and adding keys to it`, async () => {
        const id = network ? 'keyring-net' : 'keyring-offline';
        const host = await installedAttacker(id, network);
        const result = await act(host, id, { op: 'python', script: KEYRING_PROBE });
        expect(result).toEqual({ ok: true, value: { session: { ok: false, errno: 1 }, add: { ok: false, errno: 1 } } });
      });
    }
  });

  describe.runIf(['x64', 'arm64'].includes(process.arch))('user namespaces', () => {
    for (const network of [false, true]) {
      it(`refuse a plugin with network: ${network} a user namespace of its own, by every system call that makes one`, async () => {
        const id = network ? 'userns-net' : 'userns-offline';
        const host = await installedAttacker(id, network);
        const result = await act(host, id, { op: 'python', script: USER_NAMESPACE_PROBE });
        expect(result).toEqual({ ok: true, value: { unshare: { ok: false, errno: 1 }, clone: { ok: false, errno: 1 }, clone3: { ok: false, errno: 38 } } });
      });
    }
  });

  describe.runIf(process.platform === 'linux')('the descriptor on a pinned interpreter', () => {
    it('cannot be used by a plugin of a non-root host to rewrite an interpreter the host user owns', async () => {
      const asRoot = process.getuid?.() === 0;
      const work = await mkdtemp(join(tmpdir(), 'interp-writer-'));
      scratch.push(work);
      const interpreterDir = join(work, 'interpreter', 'bin');
      await mkdir(interpreterDir, { recursive: true });
      const interpreter = join(interpreterDir, 'python3');
      await copyFile(await realpath('/usr/bin/python3'), interpreter);
      await chmod(interpreter, 0o755);
      const original = await readFile(interpreter);
      const pkg = join(work, 'pkg');
      await mkdir(join(pkg, 'bin'), { recursive: true });
      await writeFile(join(pkg, 'bin', 'runner.py'), PYTHON_RUNNER, { mode: 0o755 });
      const manifest = {
        manifest_schema_version: 1,
        plugin_id: 'interp-writer',
        name: 'Interpreter writer',
        version: '1.0.0',
        description: 'Runs the code it is sent',
        namespace_owner: 'io.example.interp-writer',
        shape: 'ndjson-rpc',
        executable: 'bin/runner.py',
        advertised_tools: [{ name: 'act', description: 'Runs code', risk_class: 'read' }],
        declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
      };
      await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
      const script = join(work, 'host.mts');
      await writeFile(script, NON_ROOT_HOST);
      await mkdir(join(work, 'profile'));
      const user = 65534;
      if (asRoot) await Promise.all([work, join(work, 'interpreter'), interpreterDir, interpreter, join(work, 'profile')].map((p) => chown(p, user, user)));
      const tsx = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '.bin', 'tsx');
      const argv = [tsx, script, join(work, 'profile'), pkg, `${interpreterDir}:/usr/bin:/bin`, REWRITE_INTERPRETER, backend];
      const command = asRoot ? ['/usr/bin/setpriv', '--reuid', String(user), '--regid', String(user), '--clear-groups', '--', ...argv] : argv;
      const { stdout } = await promisify(execFile)(command[0]!, command.slice(1), { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, TMPDIR: work } });
      expect(JSON.parse(stdout)).toEqual({ ok: true, value: 'no descriptor on the interpreter' });
      expect((await readFile(interpreter)).equals(original)).toBe(true);
    }, 60_000);
  });

  describe.runIf(process.getuid?.() === 0)('plugin users on a root host', () => {
    it('are never an account of the host: a range holding nobody (65534) is refused instead of running the plugin as nobody', async () => {
      // nobody owns what NFS squashes and runs daemons (dnsmasq); a plugin sharing its uid shares their files, limits and kernel accounting.
      const host = await installedAttackers(['as-nobody'], false, { sandbox: { pluginUidRange: { first: 65_534, count: 2 } } });
      const call = await host.call('plug.as-nobody.act', { op: 'uid' });
      expect(call.isErr() ? call.error.code : call.value.value).toBe('HOST_INVALID_OPTIONS');
    });
  });

  describe('info().enforced_capabilities.readablePaths', () => {
    it('names the pinned interpreter a plugin can read when it lies outside the system directories, and each path once', async () => {
      const work = await mkdtemp(join(tmpdir(), 'readable-'));
      scratch.push(work);
      const interpreterDir = join(work, 'bin');
      await mkdir(interpreterDir);
      const interpreter = join(interpreterDir, 'python3');
      await copyFile(await realpath('/usr/bin/python3'), interpreter);
      await chmod(interpreter, 0o755);
      const pkg = join(work, 'pkg');
      await mkdir(join(pkg, 'bin'), { recursive: true });
      await writeFile(join(pkg, 'bin', 'runner.py'), PYTHON_RUNNER, { mode: 0o755 });
      const manifest = {
        manifest_schema_version: 1,
        plugin_id: 'reader',
        name: 'Reader',
        version: '1.0.0',
        description: 'Runs the code it is sent',
        namespace_owner: 'io.example.reader',
        shape: 'ndjson-rpc',
        executable: 'bin/runner.py',
        advertised_tools: [{ name: 'act', description: 'Runs code', risk_class: 'read' }],
        declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
      };
      await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
      const profile = await pool.profile();
      const options = { interpreterSearchPath: `${interpreterDir}:/usr/bin:/bin`, sandbox: { backend } };
      const installer = await pool.open(profile, options);
      (await installer.install(pkg, { canary: false }))._unsafeUnwrap();
      await installer.close();
      const host = await pool.open(profile, options);
      const read = `result = {'ok': True, 'value': len(open(${JSON.stringify(interpreter)}, 'rb').read())}`;
      const call = (await host.call('plug.reader.act', { code: read }))._unsafeUnwrap().value as ActResult;
      expect(call.value).toBeGreaterThan(0);
      const readable = (await host.info('reader'))._unsafeUnwrap().enforced_capabilities?.readablePaths ?? [];
      expect(readable).toContain(interpreter);
      expect(new Set(readable).size).toBe(readable.length);
    });
  });
});
