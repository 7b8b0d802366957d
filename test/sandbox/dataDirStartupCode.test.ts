/**
 * A plugin's data directory is its HOME, writable by it and kept across
 * upgrades and reinstalls. Code it plants there must not run at a later
 * start of the pinned code: an interpreter's start-up hooks under HOME
 * would run before (or instead of) the verified main module, outside every
 * pin. Each case plants in one start and looks in the next, through a real
 * host and each real Linux backend.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { answered, HostPool, nextEvent } from '../support/hostHarness.js';
import { LINUX_BACKENDS } from './sandboxBackends.js';

// CPython's user site-packages (~/.local/lib/pythonX.Y/site-packages): its .pth files and usercustomize run at start-up.
const PYTHON_PLANTER = `#!/usr/bin/env python3
import builtins, json, os, site, subprocess, sys
def act(params):
    user_site = site.getusersitepackages()
    pth = os.path.join(user_site, 'planted.pth')
    if params.get('op') == 'plant':
        os.makedirs(user_site, exist_ok=True)
        with open(pth, 'w') as f:
            f.write('import builtins; builtins.PLANTED_PTH = True\\n')
        with open(os.path.join(user_site, 'usercustomize.py'), 'w') as f:
            f.write('import builtins\\nbuiltins.PLANTED_USERCUSTOMIZE = True\\n')
        with open(os.path.join(os.environ['HOME'], '.bashrc'), 'w') as f:
            f.write('echo BASHRC_RAN\\n')
        # Configuration a plugin keeps on purpose (git config --global): stays.
        with open(os.path.join(os.environ['HOME'], '.gitconfig'), 'w') as f:
            f.write('[user]\\n\\tname = planter\\n')
        return {'user_site': user_site}
    # The environment the MCP SDK's stdio client gives a server it starts by default (getDefaultEnvironment), and a
    # curated one: both keep HOME and drop the host's PYTHONNOUSERSITE and SHLVL.
    sdk_env = {k: os.environ[k] for k in ('HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER') if k in os.environ}
    curated_env = {'HOME': os.environ['HOME'], 'PATH': os.environ['PATH']}
    return {
        'planted': os.path.isfile(pth),
        'pth_ran': getattr(builtins, 'PLANTED_PTH', False),
        'usercustomize_ran': getattr(builtins, 'PLANTED_USERCUSTOMIZE', False),
        'user_site_on_path': user_site in sys.path,
        'bashrc_ran': 'BASHRC_RAN' in subprocess.run(['bash', '-c', 'true'], stdout=subprocess.PIPE, text=True).stdout,
        'child_pth_ran': subprocess.run([sys.executable, '-c', 'import builtins; print(getattr(builtins, "PLANTED_PTH", False))'], capture_output=True, text=True).stdout.strip(),
        'sdk_env_child_pth_ran': subprocess.run([sys.executable, '-c', 'import builtins; print(getattr(builtins, "PLANTED_PTH", False))'], capture_output=True, text=True, env=sdk_env).stdout.strip(),
        'curated_env_bashrc_ran': 'BASHRC_RAN' in subprocess.run(['bash', '-c', 'true'], stdout=subprocess.PIPE, text=True, env=curated_env).stdout,
        'gitconfig_kept': os.path.isfile(os.path.join(os.environ['HOME'], '.gitconfig')),
    }
for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.write(json.dumps({'id': request['id'], 'result': act(request.get('params') or {})}) + '\\n')
    sys.stdout.flush()
`;

// Node's CommonJS global folders under HOME ($HOME/.node_modules, $HOME/.node_libraries) answer a require() the tree cannot.
const NODE_PLANTER = `#!/usr/bin/env node
'use strict';
const { spawnSync } = require('node:child_process');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { createInterface } = require('node:readline');
const folders = ['.node_modules', '.node_libraries'];
const act = (params) => {
  if (params.op === 'plant') {
    for (const folder of folders) {
      const dir = join(process.env.HOME, folder, 'planted-' + folder.slice(1));
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'index.js'), 'module.exports = "planted code ran";');
    }
    return { home: process.env.HOME };
  }
  const loaded = {};
  for (const folder of folders) {
    try {
      loaded[folder] = require('planted-' + folder.slice(1));
    } catch (e) {
      loaded[folder] = e.code;
    }
  }
  // A Node child started with a curated environment that keeps HOME (an SDK-based proxy starting a server of its own):
  // none of the host's bootstraps reach it, so its require() falls back to the HOME folders.
  const child = spawnSync(process.execPath, ['-e', 'for (const m of ["planted-node_modules", "planted-node_libraries"]) { try { console.log(require(m)); } catch (e) { console.log(e.code); } }'], {
    env: { HOME: process.env.HOME, PATH: process.env.PATH },
    encoding: 'utf8',
  });
  return { loaded, home_folders: require('node:module').globalPaths.filter((p) => p.startsWith(process.env.HOME)), child: (child.stdout || String(child.error)).trim().split('\\n') };
};
createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id: request.id, result: act(request.params || {}) }) + '\\n');
});
`;

// The same from an ES module main (a Node 20/21 .mjs server is started as the mounted main too), through its own require().
const NODE_ESM_PLANTER = `#!/usr/bin/env node
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
${NODE_PLANTER.replace("#!/usr/bin/env node\n'use strict';\n", '')}`;

const scratch: string[] = [];
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true }))));

async function planterPackage(pluginId: string, file: string, source: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'planter-pkg-'));
  scratch.push(dir);
  await mkdir(join(dir, 'bin'));
  await writeFile(join(dir, 'bin', file), source, { mode: 0o755 });
  const manifest = {
    manifest_schema_version: 1,
    plugin_id: pluginId,
    name: 'Planter',
    version: '1.0.0',
    description: 'Plants start-up code in its data directory, then looks whether it ran',
    namespace_owner: `io.example.${pluginId}`,
    shape: 'ndjson-rpc',
    executable: `bin/${file}`,
    advertised_tools: [{ name: 'act', description: 'plant, or look', risk_class: 'read' }],
    declared_capabilities: { network: false, fs_write_dir: '', env_allow: [] },
  };
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

type Host = Awaited<ReturnType<HostPool['open']>>;

async function act(host: Host, pluginId: string, op: string): Promise<Record<string, unknown>> {
  return answered(await host.call(`plug.${pluginId}.act`, { op })).value as Record<string, unknown>;
}

describe.each(LINUX_BACKENDS)('under %s', (backend) => {
  it('a .pth file and usercustomize planted in the Python user site of the data directory do not run at the next start, nor in a Python the plugin starts; a planted ~/.bashrc does not run in its bash -c', async () => {
    const options = { sandbox: { backend } };
    const profile = await pool.profile();
    const installer = await pool.open(profile, options);
    answered(await installer.install(await planterPackage('py-planter', 'planter.py', PYTHON_PLANTER), { canary: false }));
    await installer.close();
    const first = await pool.open(profile, options);
    const planted = await act(first, 'py-planter', 'plant');
    expect(planted['user_site']).toContain(join(profile, 'data', 'py-planter'));
    await first.close();
    const next = await pool.open(profile, options);
    const moved = nextEvent(next, 'startup_code:moved');
    // Nothing of it ran, not even in a child started with the SDK's default environment or a curated one: the host moved
    // the user site-packages and ~/.bashrc out of the data directory before the start; the .gitconfig stays.
    expect(await act(next, 'py-planter', 'look')).toEqual({
      planted: false,
      pth_ran: false,
      usercustomize_ran: false,
      user_site_on_path: false,
      bashrc_ran: false,
      child_pth_ran: 'False',
      sdk_env_child_pth_ran: 'False',
      curated_env_bashrc_ran: false,
      gitconfig_kept: true,
    });
    const event = await moved;
    const userSite = relative(join(profile, 'data', 'py-planter'), String(planted['user_site']));
    expect(event.plugin_id).toBe('py-planter');
    expect([...event.paths].sort()).toEqual(['.bashrc', userSite]);
    // The plant worked: the files are in the set the host moved them to, outside the data directory.
    expect(relative(join(profile, 'data', '.startup-code-quarantine', 'py-planter'), dirname(event.moved_to))).toBe('');
    expect(await readFile(join(event.moved_to, userSite, 'planted.pth'), 'utf8')).toContain('PLANTED_PTH');
    expect(await readFile(join(event.moved_to, '.bashrc'), 'utf8')).toBe('echo BASHRC_RAN\n');
  });

  it.each([
    ['planter.cjs', NODE_PLANTER],
    ['planter.mjs', NODE_ESM_PLANTER],
  ])('a module planted in the Node global folders of the data directory does not answer a require() at the next start (%s)', async (file, source) => {
    const options = { sandbox: { backend } };
    const profile = await pool.profile();
    const installer = await pool.open(profile, options);
    answered(await installer.install(await planterPackage('node-planter', file, source), { canary: false }));
    await installer.close();
    const first = await pool.open(profile, options);
    expect((await act(first, 'node-planter', 'plant'))['home']).toBe(join(profile, 'data', 'node-planter'));
    await first.close();
    const next = await pool.open(profile, options);
    const moved = nextEvent(next, 'startup_code:moved');
    // A Node child with a curated environment finds neither module: both folders were moved out before the start.
    expect(await act(next, 'node-planter', 'look')).toEqual({
      loaded: { '.node_modules': 'MODULE_NOT_FOUND', '.node_libraries': 'MODULE_NOT_FOUND' },
      home_folders: [],
      child: ['MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'],
    });
    expect([...(await moved).paths].sort()).toEqual(['.node_libraries', '.node_modules']);
  });
});
