/**
 * The package as it ships, built with the repository's own tsup.config.ts into a temp directory laid out as an
 * installed dependency (node_modules/mcp-plugin-host with the real package.json), then loaded by a child `node`
 * through its published names. Within one module format, `mcp-plugin-host` and `mcp-plugin-host/testing` must
 * share one copy of the library: a host made by the testing kit is a `PluginHost` of the root entry, and an error it
 * returns passes the root entry's `isHostError`.
 * The Node main-module guard stays one file (src/binding/nodeMain.ts points at it, the sandbox mounts only it).
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE = join(REPO, 'examples/plugin-author/plugin');
const SLOW = 180_000;

/** The check each child runs once it has `main` and `testing` loaded: one started plugin, one failed start. */
const CHECK = `
  const started = await testing.startPlugin(${JSON.stringify(EXAMPLE)});
  if (started.isErr()) throw started.error;
  const plugin = started.value;
  const failed = await testing.startPlugin(${JSON.stringify(join(REPO, 'no-such-plugin-dir'))});
  const report = {
    hostIsPluginHost: plugin.host instanceof main.PluginHost,
    errorIsHostError: failed.isErr() && main.isHostError(failed.error),
    errorIsInstance: failed.isErr() && failed.error instanceof main.HostError,
  };
  await plugin.close();
  process.stdout.write(JSON.stringify(report));
`;

const SCRIPTS = {
  'check.cjs': `const main = require('mcp-plugin-host');\nconst testing = require('mcp-plugin-host/testing');\n(async () => {${CHECK}})();\n`,
  'check.mjs': `import * as main from 'mcp-plugin-host';\nimport * as testing from 'mcp-plugin-host/testing';\n${CHECK}\n`,
};

describe('the built entries', () => {
  let project: string;

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'entries-'));
    const pkg = join(project, 'node_modules', 'mcp-plugin-host');
    await mkdir(pkg, { recursive: true });
    await cp(join(REPO, 'package.json'), join(pkg, 'package.json'));
    // The package's own dependencies, found from dist/ as they are next to an installed package.
    await symlink(join(REPO, 'node_modules'), join(pkg, 'node_modules'), 'dir');
    await build({ outDir: join(pkg, 'dist'), dts: false, sourcemap: false, silent: true });
    for (const [name, text] of Object.entries(SCRIPTS)) await writeFile(join(project, name), text);
  }, SLOW);
  afterAll(async () => {
    await rm(project, { recursive: true, force: true });
  });

  it.each(Object.keys(SCRIPTS))('share one copy of the library between mcp-plugin-host and mcp-plugin-host/testing (%s)', { timeout: SLOW }, (script) => {
    const run = spawnSync(process.execPath, [join(project, script)], { cwd: project, encoding: 'utf8', timeout: SLOW });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ hostIsPluginHost: true, errorIsHostError: true, errorIsInstance: true });
  });

  it('ship the Node main-module guard as one self-contained file beside the modules, the only one the sandbox mounts', async () => {
    const alone = join(project, 'guard-alone');
    await mkdir(alone);
    await cp(join(project, 'node_modules/mcp-plugin-host/dist/nodeMainGuard.cjs'), join(alone, 'nodeMainGuard.cjs'));
    const run = spawnSync(process.execPath, ['--require', join(alone, 'nodeMainGuard.cjs'), '-e', 'process.stdout.write("ran")'], { cwd: alone, encoding: 'utf8' });
    expect({ stderr: run.stderr, stdout: run.stdout }).toEqual({ stderr: '', stdout: 'ran' });
  });
});
