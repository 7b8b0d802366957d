import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PluginProcess } from '../../src/process/PluginProcess.js';
import { unverifiedCommand } from '../../src/process/spawnPluginProcess.js';
import { SandboxSpawner } from '../../src/sandbox/SandboxSpawner.js';
import { firstJsonLine } from '../support/processes.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

// A core file holds the crashing plugin's memory (its credentials, other callers' data) and lands wherever the host's
// core_pattern says. Every plugin runs with RLIMIT_CORE 0, soft and hard, so it can neither dump nor raise the limit back.
const base = mkdtempSync(join(tmpdir(), 'sandbox-core-'));
const installRoot = join(base, 'plugins', 'core-probe');
const dataDir = join(base, 'data', 'core-probe');
mkdirSync(installRoot, { recursive: true });
mkdirSync(dataDir, { recursive: true });
const source = join(base, 'limits.c');
writeFileSync(
  source,
  '#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/resource.h>\n' +
    'int main(void) { char line[256], limit[128] = ""; FILE *f = fopen("/proc/self/limits", "r");\n' +
    '  while (f != NULL && fgets(line, sizeof line, f) != NULL) if (strncmp(line, "Max core file size", 18) == 0) { line[strcspn(line, "\\n")] = 0; snprintf(limit, sizeof limit, "%s", line + 18); }\n' +
    '  char words[2][32] = {"", ""}; sscanf(limit, "%31s %31s", words[0], words[1]);\n' +
    '  struct rlimit raised = {RLIM_INFINITY, RLIM_INFINITY}; int raise = setrlimit(RLIMIT_CORE, &raised) == 0 ? 0 : errno;\n' +
    '  printf("{\\"soft\\":\\"%s\\",\\"hard\\":\\"%s\\",\\"raise\\":%d}\\n", words[0], words[1], raise); return 0; }\n',
);
const probe = join(installRoot, 'limits');
const started: PluginProcess[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.stop({ stdinGraceMs: 0, termGraceMs: 0 })));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe.each(LINUX_BACKENDS)('core dumps of a plugin (real %s)', (backend) => {
  // With a control group the bubblewrap path starts through the shell that joins it; without one, through prlimit or
  // bwrap alone: both must turn core dumps off.
  it.each(['auto', 'off'] as const)('are off, soft and hard, with controlGroups %s, with and without network', async (controlGroups) => {
    expect(spawnSync('cc', ['-static', '-o', probe, source], { encoding: 'utf8' }).stderr).toBe('');
    const spawner = (await SandboxSpawner.create({ homeDir: join(base, 'home'), backend, controlGroups }))._unsafeUnwrap();
    for (const network of [false, true]) {
      const p = (await spawner.spawn({ executable: unverifiedCommand([probe], installRoot), env: {}, network, writeDir: dataDir, hiddenPaths: [] }))._unsafeUnwrap();
      started.push(p);
      const EPERM = 1;
      expect(await firstJsonLine(p.stdout), `network: ${network}`).toEqual({ soft: '0', hard: '0', raise: EPERM });
    }
  });
});
