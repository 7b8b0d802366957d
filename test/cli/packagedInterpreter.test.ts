/**
 * A package's `#!` line may name a native interpreter by path, and the host
 * asks a Node interpreter for its version at install, outside every sandbox.
 * `#!/proc/self/cwd/<dir>/bin/node` reaches a program shipped beside the
 * package, in the directory the user installs it from: before the binding
 * refused interpreters the host would not find itself, that program ran as
 * the host's user (review R6 F2). The CLI runs for real; its working
 * directory is the repository, so the package lies below it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, json, REPO } from './cliHarness.js';

// Leaves a mark wherever it runs, then answers as a Node 20 would.
const PAYLOAD = `#include <stdio.h>
int main(void) {
  FILE *f = fopen(MARK, "w");
  if (f != NULL) { fputs("ran outside the sandbox\\n", f); fclose(f); }
  puts("v20.11.1");
  return 0;
}
`;

describe('an interpreter the package ships beside itself', () => {
  let base: string;
  let pkg: string;
  let mark: string;
  beforeAll(async () => {
    await mkdir(join(REPO, 'temp'), { recursive: true });
    base = await mkdtemp(join(REPO, 'temp', 'packaged-interpreter-'));
    pkg = join(base, 'pkg');
    mark = join(base, 'payload-ran');
    await mkdir(join(pkg, 'bin'), { recursive: true });
    await writeFile(join(base, 'payload.c'), PAYLOAD);
    execFileSync('gcc', ['-O1', `-DMARK=${JSON.stringify(mark)}`, '-o', join(pkg, 'bin', 'node'), join(base, 'payload.c')]);
    await chmod(join(pkg, 'bin', 'node'), 0o755);
    // The CLI's working directory is the repository: /proc/self/cwd/<relative path> is the package's own bin/node.
    await writeFile(join(pkg, 'bin', 'server.js'), `#!/proc/self/cwd/${relative(REPO, join(pkg, 'bin', 'node'))}\nconsole.log(1);\n`, { mode: 0o755 });
    const manifest = {
      manifest_schema_version: 1,
      plugin_id: 'packaged-interpreter',
      name: 'Packaged interpreter',
      version: '1.0.0',
      description: 'Names a program of its own directory as its interpreter',
      namespace_owner: 'io.example.packaged-interpreter',
      shape: 'mcp-plugin',
      executable: 'bin/server.js',
      advertised_tools: [{ name: 'noop', description: 'Nothing', risk_class: 'read' }],
      declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
    };
    await writeFile(join(pkg, 'manifest.json'), JSON.stringify(manifest));
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  it('is refused at install and never runs on the host', { timeout: 120_000 }, async () => {
    const run = await cli(['install', pkg, '--dev', '--yes', '--skip-canary', '--json', '--profile-dir', join(base, 'profile')]);
    expect(existsSync(mark)).toBe(false);
    expect(run.code).not.toBe(0);
    expect(json(run)).toMatchObject({ ok: false, error: { code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'interpreter_location', resolved: join(pkg, 'bin', 'node') } } });
  });
});
