/**
 * Python packages as published: a manifest whose `executable` is not a file
 * of the package but a console script of its `pyproject.toml`
 * (`[project.scripts]`) is installed into a private environment inside the
 * install root, from the wheels the package ships, before the install pins
 * anything. The executable then pinned is a launcher the host writes there:
 * a `#!` script for the resolved interpreter (`-IS`: no user or system
 * site-packages, no environment variables) that puts only the private
 * environment's site-packages on `sys.path` and calls the entry point. So
 * the environment is part of the pinned tree and runs under the sandbox like
 * any other `#!` script; no interpreter link is left in it (pinned trees hold
 * no links). See docs/published-servers.md#python.
 */
import { spawn, type StdioOptions } from 'node:child_process';
import { Server } from 'node:net';
import type { Writable } from 'node:stream';
import { existsSync } from 'node:fs';
import { lchown, lstat, readdir, rename, unlink, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { parse as parseToml } from 'smol-toml';
import { hostError, type HostError } from '../errors/HostError.js';
import { ioError } from '../errors/ioError.js';
import { pinInterpreter } from '../binding/interpreter.js';
import type { PluginIdentity } from '../sandbox/pluginIdentity.js';
import { CONFINEMENT_SECCOMP_FD, confinedCommand, type ConfinedCommand } from './installConfinement.js';
import { hostProxyFor } from './hostProxy.js';
import { originOf, originOnlyProxy, type OriginOnlyProxy } from './originProxy.js';
import { DEFAULT_PACKAGE_LIMITS, type PackageLimits } from './limits.js';
import { watchGrowth, type GrowthExceeded } from './npmGrowth.js';
import { archiveInvalid } from './refusal.js';
import { readAtMost } from '../manifest/readAtMost.js';
import { refuseDirectReferences } from './wheelRequirements.js';
import settings from '../../etc/python-install.json' with { type: 'json' };

/** A console script of a package's `pyproject.toml` that the manifest names as its executable. */
export interface ConsoleScript {
  /** The script name (`[project.scripts]` key, the manifest's `executable`). */
  readonly name: string;
  /** The distribution to install (`[project].name`). */
  readonly project: string;
  /** The importable module of the entry point (`hello_plugin` in `hello_plugin:main`). */
  readonly module: string;
  /** The attribute path called in that module (`main`). */
  readonly attribute: string;
}

/** Where a package's console script was installed: the executable to pin, relative to the install root. */
export interface InstalledConsoleScript {
  /** The launcher the host wrote, relative to the install root. */
  readonly executable: string;
  /** The interpreter the launcher names (absolute real path). */
  readonly interpreter: string;
}

/** Options of {@link installConsoleScript}. */
export interface PythonInstallOptions {
  /** PATH on which the interpreter (`python3`) is found, as for `#!/usr/bin/env` lines. */
  readonly searchPath: string;
  /**
   * A package index (PEP 503 simple API) pip may fetch missing wheels from;
   * without it pip never uses the network. pip reaches it only through the
   * host's proxy, which admits the index's origin and the origins
   * etc/python-install.json `indexFileOrigins` lists for it, nothing else.
   */
  readonly indexUrl?: string;
  /** On a root host, the plugin's own user: pip and the environment's interpreter run as it, owning only the environment while they run. */
  readonly identity?: PluginIdentity;
  /** The package limits the whole install root, environment included, is held to while pip and the interpreter run. Default {@link DEFAULT_PACKAGE_LIMITS}. */
  readonly limits?: PackageLimits;
}

type Reason = 'pyproject_invalid' | 'entry_point_invalid' | 'no_wheels' | 'environment_exists' | 'venv_failed' | 'pip_failed' | 'environment_invalid';

const failure = (reason: Reason, message: string, details: Record<string, unknown> = {}): HostError =>
  hostError('PLUGIN_PYTHON_INSTALL_FAILED', message, { details: { reason, ...details } });

// A dotted Python name path; a console_scripts value may end with [extras], which change nothing for the script.
const ENTRY_POINT = /^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*:\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*(?:\[[^\]]*\])?\s*$/;

const isTable = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The console script the manifest's `executable` names, or `undefined` when
 * the package has a file by that name or no `pyproject.toml` script of that
 * name (an ordinary executable, bound as it is).
 */
export async function consoleScriptOf(root: string, executable: string): Promise<Result<ConsoleScript | undefined, HostError>> {
  const pyproject = join(root, 'pyproject.toml');
  if (executable.includes('/') || existsSync(join(root, executable)) || !existsSync(pyproject)) return ok(undefined);
  let document: unknown;
  try {
    const bytes = await readAtMost(pyproject, settings.maxPyprojectBytes);
    if (bytes.length > settings.maxPyprojectBytes) {
      return err(failure('pyproject_invalid', `pyproject.toml of the package is over the ${settings.maxPyprojectBytes}-byte limit`, { path: pyproject }));
    }
    document = parseToml(bytes.toString('utf8'));
  } catch (cause) {
    return err(failure('pyproject_invalid', `pyproject.toml of the package cannot be read: ${(cause as Error).message}`, { path: pyproject }));
  }
  const project = isTable(document) ? document['project'] : undefined;
  const scripts = isTable(project) ? project['scripts'] : undefined;
  if (!isTable(scripts) || !Object.hasOwn(scripts, executable)) return ok(undefined);
  const name = isTable(project) ? project['name'] : undefined;
  if (typeof name !== 'string' || !/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(name)) {
    return err(failure('pyproject_invalid', 'pyproject.toml names a console script but no valid [project].name to install', { path: pyproject }));
  }
  const target = scripts[executable];
  const parsed = typeof target === 'string' ? ENTRY_POINT.exec(target) : null;
  if (parsed === null) {
    return err(failure('entry_point_invalid', `[project.scripts] ${executable} = ${JSON.stringify(target)} is not "module:attribute"`, { script: executable }));
  }
  return ok({ name: executable, project: name, module: parsed[1]!, attribute: parsed[2]! });
}

interface CommandOutcome {
  readonly failed: boolean;
  readonly stdout: string;
  readonly stderr: string;
  /** The package limit the tree crossed while the command ran, which killed it. */
  readonly exceeded?: GrowthExceeded;
}

/** What a command may write: `root` stays within `limits` while it runs, or the command is killed. */
interface GrowthBound {
  readonly root: string;
  readonly limits: PackageLimits;
}

/**
 * Runs `argv` with nothing of the host's environment; `seccomp`, when given,
 * is written to the child's descriptor {@link CONFINEMENT_SECCOMP_FD} (a pipe
 * bubblewrap reads its `--seccomp` program from). With `proxy`, the child
 * also gets a Node IPC channel, on which a confined command hands over the
 * listener of its proxy address ({@link ConfinedCommand.handsOverListener});
 * `proxy` serves it.
 */
function run(argv: readonly string[], searchPath: string, growth?: GrowthBound, seccomp?: Buffer, proxy?: OriginOnlyProxy): Promise<CommandOutcome> {
  return new Promise((resolve) => {
    let exceeded: GrowthExceeded | undefined;
    let stopWatching = (): Promise<void> => Promise.resolve();
    const output = { stdout: '', stderr: '' };
    const keep = (stream: 'stdout' | 'stderr') => (chunk: string): void => {
      // What a command prints beyond 16 MiB is dropped, as execFile's maxBuffer would end it.
      if (output[stream].length < 16 << 20) output[stream] += chunk;
    };
    const stdio: StdioOptions = ['ignore', 'pipe', 'pipe', ...(seccomp === undefined ? [] : ['pipe' as const]), ...(proxy === undefined ? [] : ['ipc' as const])];
    const child = spawn(argv[0]!, argv.slice(1), {
      // Nothing from the host's environment steers pip (index URLs, config files, user site).
      env: { PATH: searchPath, PYTHONDONTWRITEBYTECODE: '1', PYTHONNOUSERSITE: '1', LC_ALL: 'C.UTF-8' },
      stdio,
    });
    // Only a listener is taken from the channel; the command closes it before anything of the package runs.
    if (proxy !== undefined) child.on('message', (_message: unknown, handle: unknown) => (handle instanceof Server ? proxy.serve(handle) : undefined));
    child.stdout?.setEncoding('utf8').on('data', keep('stdout'));
    child.stderr?.setEncoding('utf8').on('data', keep('stderr'));
    if (seccomp !== undefined) {
      const program = child.stdio[CONFINEMENT_SECCOMP_FD] as Writable | null;
      // bubblewrap may be gone before it read all of it: that pipe's EPIPE is the command failing, reported by its exit.
      program?.on('error', () => undefined);
      program?.end(seccomp);
    }
    const timer = setTimeout(() => child.kill('SIGTERM'), settings.commandTimeoutMs);
    let settled = false;
    const finish = (failure: string | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stopWatching().then(() => resolve({ failed: failure !== undefined, stdout: output.stdout, stderr: output.stderr || (failure ?? ''), ...(exceeded === undefined ? {} : { exceeded }) }));
    };
    child.on('error', (cause) => finish(cause.message));
    child.on('close', (code, signal) => finish(code === 0 ? undefined : `${argv[0]!} ended with ${signal ?? `exit ${String(code)}`}`));
    // Killing bubblewrap takes its whole sandbox with it (--die-with-parent, its own PID namespace).
    if (growth !== undefined) {
      stopWatching = watchGrowth(growth.root, undefined, growth.limits, (crossed) => {
        exceeded = crossed;
        child.kill('SIGKILL');
      });
    }
  });
}

const limitCrossed = (exceeded: GrowthExceeded): HostError =>
  archiveInvalid('limit', undefined, `the Python environment grew past the package limit ${exceeded.limit} (${exceeded.max}); pip was stopped (${exceeded.seen} seen)`, {
    limit: exceeded.limit,
    max: exceeded.max,
  });

const tail = (text: string): string => text.slice(-settings.stderrTailChars);

/** pip's failure; when the index proxy refused requests, it names them (a file host the index links that is not admitted, or a URL a package named). */
function pipFailed(script: ConsoleScript, pip: CommandOutcome, proxy: OriginOnlyProxy | undefined): HostError {
  const refused = [...(proxy?.refused ?? [])];
  const hostOnly = [...(proxy?.hostOnly ?? [])];
  const details = {
    project: script.project,
    stderr_tail: tail(pip.stderr),
    ...(refused.length === 0 ? {} : { refused, admitted_origins: proxy?.origins ?? [] }),
    ...(hostOnly.length === 0 ? {} : { host_only_answers: hostOnly }),
  };
  // An index name answered with the host's own addresses is not a missing file host: it says so first.
  const because =
    hostOnly.length > 0
      ? ` (the install's proxy dials no address only the host reaches, and ${hostOnly.join('; ')}: name a local index by its address or as localhost)`
      : refused.length === 0
        ? ''
        : ` (the install's proxy refused ${refused.slice(0, 3).join(', ')}${refused.length > 3 ? ', …' : ''}: pip reaches only ${(proxy?.origins ?? []).join(', ')}; an index that serves its files from another host needs that host in etc/python-install.json indexFileOrigins)`;
  return failure('pip_failed', `pip could not install ${script.project} from the package's wheels${because}: ${tail(pip.stderr)}`, details);
}

/** pip's options: offline unless the caller named an index, and then that index alone, through the proxy address of its confinement. */
const pipOptions = (indexUrl: string | undefined): string[] =>
  indexUrl === undefined
    ? [...settings.pipInstallOptions]
    : [...settings.pipInstallOptions.filter((option) => option !== '--no-index'), '--index-url', indexUrl, '--proxy', `http://127.0.0.1:${settings.indexProxyPort}`];

/**
 * The origins (`host:port`) pip may reach for `indexUrl`: the index's own,
 * and the ones its pages link files on (etc/python-install.json
 * `indexFileOrigins`: PyPI's simple pages name files.pythonhosted.org). The
 * pages go through https tunnels the proxy cannot read, so the set is
 * decided from the index URL alone, before pip runs.
 */
export function indexOrigins(indexUrl: string): string[] {
  const origin = originOf(new URL(indexUrl));
  const files = (settings.indexFileOrigins as Record<string, readonly string[] | undefined>)[origin] ?? [];
  return [origin, ...files];
}

/** The launcher: the interpreter without site (so no system or user packages), the environment's site-packages, the entry point. */
function launcherSource(interpreter: string, sitePackages: readonly string[], script: ConsoleScript): string {
  const literal = (value: unknown): string => JSON.stringify(value);
  return [
    `#!${interpreter} -IS`,
    `# Written by mcp-plugin-host at install: the console script ${script.name} (${script.module}:${script.attribute}) of ${script.project},`,
    '# run with the packages of this private environment and nothing else from the system.',
    'import importlib, os, site, sys',
    'environment = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))',
    'sys.prefix = sys.exec_prefix = environment',
    `for directory in ${literal(sitePackages)}:`,
    '    site.addsitedir(os.path.join(environment, directory))',
    `target = importlib.import_module(${literal(script.module)})`,
    `for name in ${literal(script.attribute.split('.'))}:`,
    '    target = getattr(target, name)',
    'sys.exit(target())',
    '',
  ].join('\n');
}

/** Removes the links `venv` made to the interpreter (bin/python*, lib64): a pinned tree holds none, and the launcher needs none. */
async function removeLinks(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) await unlink(path);
    else if (entry.isDirectory()) await removeLinks(path);
  }
}

/** Gives `dir` and everything below it to `owner`, links themselves and never what they name. */
async function ownTree(dir: string, owner: PluginIdentity): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await ownTree(path, owner);
    else await lchown(path, owner.uid, owner.gid);
  }
}

/** The environment's site-packages directories, relative to it; they must lie inside it. */
function sitePackagesOf(output: string, environment: string): Result<string[], HostError> {
  let paths: unknown;
  try {
    paths = JSON.parse(output);
  } catch {
    paths = undefined;
  }
  const inside = Array.isArray(paths) ? paths.filter((p): p is string => typeof p === 'string').map((p) => relative(environment, p)) : [];
  if (inside.length === 0 || inside.some((p) => p === '' || p.startsWith('..') || isAbsolute(p))) {
    return err(failure('environment_invalid', `the private environment reports site-packages outside itself: ${output.trim()}`));
  }
  return ok([...new Set(inside)]);
}

/**
 * Installs `script`'s project and its dependencies from the package's
 * wheels into `<root>/.mcp-plugin-host:venv` with the interpreter found on
 * the search path, and writes the launcher that the install then pins.
 * Never builds an sdist (no package code runs here), and uses the network
 * only when `options.indexUrl` names an index.
 * Fails with `PLUGIN_PYTHON_INSTALL_FAILED` (`details.reason`), or
 * `PLUGIN_EXECUTABLE_UNTRUSTED` when the interpreter is missing or is not a
 * native program (a pyenv shim, for one).
 */
export async function installConsoleScript(root: string, script: ConsoleScript, options: PythonInstallOptions): Promise<Result<InstalledConsoleScript, HostError>> {
  const pinned = await pinInterpreter({ program: settings.interpreter, viaEnv: true, args: [] }, join(root, 'pyproject.toml'), options.searchPath);
  if (pinned.isErr()) return err(pinned.error);
  const python = pinned.value.path;
  if (/\s/.test(python)) {
    return err(failure('environment_invalid', `the interpreter ${python} has white space in its path, which a #! line cannot name`, { interpreter: python }));
  }
  const findLinks = settings.wheelDirs.map((dir) => join(root, dir)).filter((dir) => existsSync(dir));
  if (findLinks.length === 0) {
    return err(failure('no_wheels', `the package names the console script ${script.name} but ships no wheels (${settings.wheelDirs.join('/ or ')}/)`, { script: script.name }));
  }
  const shippedRequirements = await refuseDirectReferences(root, settings.wheelDirs);
  if (shippedRequirements.isErr()) return err(shippedRequirements.error);
  const environment = join(root, settings.environmentDir);
  // venv refuses a ':' in its path, so it is built under a name without one and renamed once complete.
  const building = join(root, `.mcp-plugin-host-venv-${process.pid}`);
  for (const path of [environment, building]) {
    if (existsSync(path)) return err(failure('environment_exists', `${path} already exists; a package must not ship it`, { path }));
  }
  const venv = await run([python, '-I', '-m', 'venv', '--without-pip', building], options.searchPath);
  if (venv.failed) return err(failure('venv_failed', `${python} -m venv failed: ${tail(venv.stderr)}`, { interpreter: python, stderr_tail: tail(venv.stderr) }));
  const environmentPython = join(building, 'bin', 'python');
  const identity = options.identity;
  const limits = options.limits ?? DEFAULT_PACKAGE_LIMITS;
  const pipCommand = confinedCommand(
    [python, '-I', '-m', 'pip', '--python', environmentPython, 'install', ...pipOptions(options.indexUrl), ...findLinks.flatMap((dir) => ['--find-links', dir]), script.project],
    {
      writable: root,
      interpreter: python,
      tmpBytes: limits.maxArchiveBytes,
      ...(options.indexUrl === undefined ? {} : { proxyPort: settings.indexProxyPort }),
      ...(identity === undefined ? {} : { identity }),
    },
  );
  if (pipCommand.isErr()) return err(pipCommand.error);
  try {
    if (identity !== undefined) await ownTree(building, identity);
  } catch (cause) {
    return err(ioError('Handing the Python environment to the plugin user', building, cause));
  }
  // A wheel is a zip: a small one can unpack to far more than the package the limits were checked on.
  const growth: GrowthBound = { root, limits };
  // The host's own proxy, when it has one, is how the host reaches the index: the confinement has no other route.
  const upstream = (origin: URL): URL | undefined => hostProxyFor(origin);
  const proxy = options.indexUrl === undefined ? undefined : originOnlyProxy(indexOrigins(options.indexUrl), `only the package index is reachable while pip installs`, { upstream });
  let pip: CommandOutcome;
  try {
    pip = await run(pipCommand.value.argv, options.searchPath, growth, pipCommand.value.seccomp, proxy);
  } finally {
    await proxy?.close();
  }
  if (pip.exceeded !== undefined) return err(limitCrossed(pip.exceeded));
  if (pip.failed) return err(pipFailed(script, pip, proxy));
  // The environment's interpreter reads the .pth files the wheels installed, which may hold code: it runs confined too.
  const pathsCommand = confinedCommand([environmentPython, '-I', '-c', "import json, sysconfig; print(json.dumps([sysconfig.get_path('purelib'), sysconfig.get_path('platlib')]))"], {
    writable: root,
    interpreter: python,
    tmpBytes: limits.maxArchiveBytes,
    ...(identity === undefined ? {} : { identity }),
  });
  if (pathsCommand.isErr()) return err(pathsCommand.error);
  const paths = await run(pathsCommand.value.argv, options.searchPath, growth, pathsCommand.value.seccomp);
  if (paths.exceeded !== undefined) return err(limitCrossed(paths.exceeded));
  if (paths.failed) return err(failure('environment_invalid', `the private environment's interpreter did not start: ${tail(paths.stderr)}`, { stderr_tail: tail(paths.stderr) }));
  const sitePackages = sitePackagesOf(paths.stdout, building);
  if (sitePackages.isErr()) return err(sitePackages.error);
  const launcher = join(settings.environmentDir, 'bin', script.name);
  try {
    if (identity !== undefined) await ownTree(building, { uid: 0, gid: 0 });
    await removeLinks(building);
    await rename(building, environment);
    const target = join(root, launcher);
    // Whatever the wheels or a .pth line left at the launcher's name goes (a FIFO there would block the write for good).
    if ((await lstat(target).catch(() => undefined))?.isDirectory() === false) await unlink(target);
    await writeFile(target, launcherSource(python, sitePackages.value, script), { mode: 0o755, flag: 'wx' });
  } catch (cause) {
    return err(ioError('Writing the Python environment', environment, cause));
  }
  return ok({ executable: launcher.split('\\').join('/'), interpreter: python });
}
