import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LINUX_BACKENDS } from './sandboxBackends.js';

// Whatever starts the host (a shell, a service manager) may leave a descriptor open without close-on-exec: the host's
// Node then hands it to every child. The Landlock launcher closed such descriptors; bubblewrap passed them to the
// plugin (a host log file, a socket, a directory outside every tree the sandbox shows, here a file of the host's),
// until attack round 4: its plugin now starts through the launcher's scope-only mode, which closes them too.
const base = mkdtempSync(join(tmpdir(), 'sandbox-leaked-fds-'));
const installRoot = join(base, 'install');
const writeDir = join(base, 'data');
const secret = join(base, 'host-secret.txt');
const leakyHost = fileURLToPath(new URL('./leakyHost.ts', import.meta.url));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe.each(LINUX_BACKENDS)('a descriptor the host\'s parent leaked (real %s)', (backend) => {
  it('does not reach the plugin', () => {
    for (const dir of [installRoot, writeDir]) mkdirSync(dir, { recursive: true });
    writeFileSync(secret, 'host secret');
    // fd 57, without close-on-exec, open in the host from its start, as a shell's redirection leaves it (bash: dash takes one digit).
    const run = spawnSync('/bin/bash', ['-c', `exec 57<"$1"; exec "$2" --import tsx "$3" "$4" "$5" "$6"`, 'sh', secret, process.execPath, leakyHost, backend, installRoot, writeDir], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const report = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as { plugin?: number[]; hostLeaks?: number[]; error?: string };
    expect(report.error, run.stderr).toBeUndefined();
    // The leak is real: the host holds it, inheritable.
    expect(report.hostLeaks).toContain(57);
    // 0-2 stdio and the directory ls opened: nothing of the host's.
    expect(report.plugin).toEqual([0, 1, 2, 3]);
  });
});
