/**
 * Attacks a malicious plugin can mount from inside the real sandbox, each
 * through a real host, real bubblewrap and a plugin whose `act` tool runs one
 * attack per call.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HostPool } from '../host/helpers.js';

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

const ATTACKER = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
import { execFileSync } from 'node:child_process';
const act = (p) => {
  try {
    switch (p.op) {
      case 'keyring': return { ok: true, value: JSON.parse(execFileSync('/usr/bin/python3', ['-c', p.script], { encoding: 'utf8' })) };
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

async function installedAttacker(pluginId: string, network: boolean): Promise<Awaited<ReturnType<HostPool['open']>>> {
  const profile = await pool.profile();
  const installer = await pool.open(profile);
  (await installer.install(await attackerPackage(pluginId, network), { canary: false }))._unsafeUnwrap();
  await installer.close();
  return pool.open(profile);
}

type ActResult = { ok: boolean; code?: string; value?: unknown };

async function act(host: Awaited<ReturnType<HostPool['open']>>, pluginId: string, params: Record<string, unknown>): Promise<ActResult> {
  const result = await host.call(`plug.${pluginId}.act`, params);
  if (result.isErr()) throw result.error;
  return result.value.value as ActResult;
}

describe.runIf(['x64', 'arm64'].includes(process.arch))('kernel keyrings', () => {
  for (const network of [false, true]) {
    it(`refuse a plugin with network: ${network} its session keyring (the host's) and adding keys to it`, async () => {
      const id = network ? 'keyring-net' : 'keyring-offline';
      const host = await installedAttacker(id, network);
      const result = await act(host, id, { op: 'keyring', script: KEYRING_PROBE });
      expect(result).toEqual({ ok: true, value: { session: { ok: false, errno: 1 }, add: { ok: false, errno: 1 } } });
    });
  }
});
