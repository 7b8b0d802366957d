/**
 * Fetching an npm package and its production dependency tree with npm's own
 * machinery: the npm CLI shipped with the running Node, run as a subprocess
 * with install scripts off, dev dependencies left out, no audit or fund
 * calls, and a private cache and configuration under the staging directory
 * (the user's `.npmrc` files are never read, so no token of theirs is used
 * and no setting of theirs changes what is installed). npm verifies every
 * tarball against the integrity the registry (or, for a local tarball, the
 * lockfile it writes) records before it unpacks it.
 *
 * The install strategy is `shallow`: the package is the only entry of the
 * top-level `node_modules`, and its whole dependency tree sits below it in
 * its own `node_modules`, so the package directory alone is a complete tree
 * Node resolves from.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import settings from '../../etc/npm-install.json' with { type: 'json' };
import { hostError, type HostError } from '../errors/HostError.js';
import { DEFAULT_PACKAGE_LIMITS, type PackageLimits } from './limits.js';
import { archiveInvalid } from './refusal.js';
import { watchGrowth, type GrowthExceeded } from './npmGrowth.js';
import { packagesWithInstallScripts } from './npmInstallScripts.js';
import { adoptPeerDependencies } from './npmPeers.js';
import { readAtMost } from '../manifest/readAtMost.js';
import { SecretRedactor } from '../secrets/knownSecrets.js';
import { startRegistryOnlyProxy, type RegistryOnlyProxy } from './npmProxy.js';
import { exemptFromHostProxy } from './hostProxy.js';

/** Where npm comes from and which registry it asks. */
export interface NpmSettings {
  /**
   * The npm CLI script (`npm-cli.js`) run with the host's own Node. Default:
   * the npm shipped with that Node (`<prefix>/lib/node_modules/npm/bin/npm-cli.js`).
   */
  readonly cli?: string;
  /**
   * The registry URL. Default `https://registry.npmjs.org/` (etc/npm-install.json).
   * A user and password in it (`https://user:password@host/`) are taken out
   * of the URL npm is given and passed to it as its userconfig through a pipe.
   */
  readonly registry?: string;
  /**
   * A token for the registry (npm's `_authToken`, sent as a bearer token),
   * passed to npm as its userconfig through a pipe, never in a file, its
   * command line or environment, and redacted from every error.
   */
  readonly token?: string;
}

/** What an `npm:` source names: a package of the registry, or a local tarball made by `npm pack`. */
export type NpmSpec =
  | { readonly kind: 'registry'; readonly spec: string; readonly name: string }
  | { readonly kind: 'tarball'; readonly path: string };

// npm's pointer to its debug log, which lives in the staging directory's npm cache (etc/npm-install.json npmDebugLogLine).
const DEAD_LOG_LINE = new RegExp(settings.npmDebugLogLine);
// npm's first error line, `npm error code E404`, and the prefix of each of its error lines (etc/npm-install.json).
const ERROR_CODE_LINE = new RegExp(settings.npmErrorCodeLine);
const ERROR_LINE_PREFIX = new RegExp(settings.npmErrorLinePrefix);

/**
 * The lines of npm's output a failure's message quotes: its error code and
 * the next two error lines that say something, where npm printed a code;
 * else its last three lines. An E404 ends in a blank `npm error 404` and two
 * lines of advice ("Note that you can also install from a tarball, …"):
 * the last three lines dropped the package the registry lacks
 * (anilist-mcp@1.4.0's `@yuna0x0/anilist-node`).
 */
export function npmReasonLines(printed: string): string[] {
  const lines = printed.trim().split('\n');
  const code = lines.findIndex((line) => ERROR_CODE_LINE.test(line));
  if (code === -1) return lines.slice(-3);
  const said = lines.slice(code + 1).filter((line) => ERROR_LINE_PREFIX.test(line) && line.replace(ERROR_LINE_PREFIX, '').trim() !== '');
  return [lines[code] ?? '', ...said.slice(0, 2)];
}

/** Why an npm install failed; `details.reason` of PLUGIN_NPM_INSTALL_FAILED. */
export type NpmFailureReason =
  | 'invalid_spec'
  | 'npm_unavailable'
  | 'npm_failed'
  | 'layout_unexpected'
  | 'no_bin'
  | 'unknown_bin'
  | 'no_manifest'
  | 'manifest_conflict'
  | 'dependency_source'
  | 'package_mismatch';

/** A PLUGIN_NPM_INSTALL_FAILED error. */
export function npmFailure(reason: NpmFailureReason, message: string, details: Record<string, unknown> = {}): HostError {
  return hostError('PLUGIN_NPM_INSTALL_FAILED', message, { details: { reason, ...details } });
}

/** The `npm:` prefix of package sources fetched with npm. */
export const NPM_SOURCE_PREFIX = 'npm:';

// A registry package name (scoped or not, as npm accepts new names), optionally @ a version, range or tag.
const REGISTRY_SPEC = /^((?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*)(?:@([A-Za-z0-9.^~<>=|*+ -]+))?$/;

/**
 * Reads the text after `npm:`. A path (it starts with `.` or `/`, or ends
 * with `.tgz`) names a local tarball, resolved against `cwd`; anything else
 * must be `<name>` or `<name>@<version|range|tag>`. Git, URL and alias specs
 * are refused: their bytes are not pinned by registry integrity.
 */
export function parseNpmSpec(source: string, cwd: string = process.cwd()): Result<NpmSpec, HostError> {
  const text = source.startsWith(NPM_SOURCE_PREFIX) ? source.slice(NPM_SOURCE_PREFIX.length) : source;
  if (text.startsWith('.') || isAbsolute(text) || text.endsWith('.tgz')) return ok({ kind: 'tarball', path: resolve(cwd, text) });
  const match = REGISTRY_SPEC.exec(text);
  if (match?.[1] === undefined) {
    return err(
      npmFailure('invalid_spec', `'${source}' is neither npm:<name>@<version> nor npm:<path to a .tgz made by npm pack>`, { source }),
    );
  }
  return ok({ kind: 'registry', spec: text, name: match[1] });
}

/** The npm CLI shipped with the Node that runs the host. */
export function bundledNpmCli(): string {
  return join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
}

/** The package npm installed: its directory (a complete tree) and what its package.json says. */
export interface FetchedNpmPackage {
  /** The package directory, its dependencies in its own `node_modules`. */
  readonly dir: string;
  /** `name` of its package.json. */
  readonly name: string;
  /** `version` of its package.json. */
  readonly version: string;
  /** Its package.json, parsed. */
  readonly packageJson: Readonly<Record<string, unknown>>;
  /** The packages of its tree (itself included) whose install scripts npm skipped. */
  readonly installScripts: readonly string[];
  /**
   * The registry npm fetched a registry package from, as npm was told it
   * (no user or password; ends with `/`); absent for a local tarball. Two
   * registries may each publish a package of the same name.
   */
  readonly registry?: string;
}

const tail = (text: string): string => {
  const bytes = Buffer.from(text);
  return bytes.length <= settings.stderrTailBytes ? text : bytes.subarray(bytes.length - settings.stderrTailBytes).toString();
};

/** What npm may write while it runs: its project tree and its cache, under the package limits. */
interface NpmGrowthBounds {
  readonly project: string;
  readonly cache: string;
  readonly limits: PackageLimits;
}

// The file descriptor npm reads its userconfig from (npm_config_userconfig=/dev/fd/3).
const USERCONFIG_FD = 3;
// Ends the here-document holding the userconfig; every line of a userconfig starts with `//`, so none is this.
const USERCONFIG_END = 'NPMRC_END';

/**
 * What `sh -s` reads on its stdin to start npm: the userconfig as a
 * here-document on fd 3 (a pipe: the credentials are never in a file, so a
 * SIGKILL of the host leaves none behind), then npm in the shell's place,
 * with nothing on its stdin.
 */
const npmLauncherScript = (npmrc: string): string => `exec ${USERCONFIG_FD}<<'${USERCONFIG_END}'\n${npmrc}${USERCONFIG_END}\nexec "$@" 0</dev/null\n`;

function runNpm(cli: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, npmrc: string, redactor: SecretRedactor, bounds?: NpmGrowthBounds): Promise<Result<void, HostError>> {
  return new Promise((done) => {
    let exceeded: GrowthExceeded | undefined;
    let stopWatching: () => Promise<void> = () => Promise.resolve();
    const child = execFile('/bin/sh', ['-s', '--', process.execPath, cli, ...args], { cwd, env, timeout: settings.timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      void stopWatching().then(() => finish(error, stderr));
    });
    // The shell may be gone before it read all of it (killed): its stdin's EPIPE is not npm's failure.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(npmLauncherScript(npmrc));
    if (bounds !== undefined) {
      stopWatching = watchGrowth(bounds.project, bounds.cache, bounds.limits, (crossed) => {
        exceeded = crossed;
        child.kill('SIGKILL');
      });
    }
    const finish = (error: Error & { killed?: boolean; code?: unknown } | null, stderr: string): void => {
      if (exceeded !== undefined) {
        return done(
          err(
            archiveInvalid('limit', undefined, `npm wrote more than the package limit ${exceeded.limit} (${exceeded.max}) and was stopped (${exceeded.seen} seen)`, {
              limit: exceeded.limit,
              max: exceeded.max,
            }),
          ),
        );
      }
      if (error === null) return done(ok(undefined));
      // npm's "A complete log of this run can be found in: <staging>/…/_logs/…" names a file removed with the staging
      // directory before anyone reads it, and as the last line it pushed npm's reason out of the message's three lines.
      const printed = redactor.redact(tail(stderr.split('\n').filter((line) => !DEAD_LOG_LINE.test(line)).join('\n')));
      done(
        err(
          npmFailure('npm_failed', `npm install failed (${error.killed ? 'timed out' : `exit ${String(error.code)}`}): ${npmReasonLines(printed).join(' ')}`, {
            stderr_tail: printed,
          }),
        ),
      );
    };
  });
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON object file; `undefined` when it cannot be read, is not an object, or holds more than `maxBytes` (no more of it is read). */
async function readJson(path: string, maxBytes: number): Promise<Record<string, unknown> | undefined> {
  try {
    const bytes = await readAtMost(path, maxBytes);
    if (bytes.length > maxBytes) return undefined;
    const parsed: unknown = JSON.parse(bytes.toString('utf8'));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The environment npm runs with: nothing of the host's but the proxy and CA settings named in etc/npm-install.json. */
function npmEnvironmentOf(home: string, ownProxy: boolean, registry: string): NodeJS.ProcessEnv {
  // Behind the registry-only proxy, no NO_PROXY entry (127.0.0.1, an internal domain) may send a request around it.
  const names = settings.passedEnv.filter((name) => !PROXY_ENV.includes(name) || (!ownProxy && !NO_PROXY_ENV.includes(name)));
  const passed = Object.fromEntries(names.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]]])));
  // Behind the host's proxy, a NO_PROXY entry sent a dependency's URL (an internal service's, the reason it is listed)
  // around it, straight from the host: npm keeps one for the registry alone, when the host's list exempts it.
  const direct = !ownProxy && exemptFromHostProxy(new URL(registry).hostname) ? { NO_PROXY: new URL(registry).hostname } : {};
  return { ...passed, ...direct, PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: home, npm_config_userconfig: `/dev/fd/${USERCONFIG_FD}`, npm_config_globalconfig: join(home, 'npmrc-global') };
}

// The host's own proxy settings: with an https proxy set npm goes through the host's proxy, which decides; else through
// ours. npm (@npmcli/agent) sends an https URL through HTTPS_PROXY only: with HTTP_PROXY alone it connected to any
// https URL a dependency named itself, so an http proxy alone is no proxy of the host's here.
const PROXY_ENV = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];
const NO_PROXY_ENV = ['NO_PROXY', 'no_proxy'];
const hostHasProxy = (): boolean => ['HTTPS_PROXY', 'https_proxy'].some((name) => (process.env[name] ?? '') !== '');

/** The registry as npm is told it (no user or password in its URL), the private configuration that authenticates to it, and what to redact. */
interface RegistryAccess {
  readonly url: string;
  readonly npmrc: string;
  readonly redactor: SecretRedactor;
}

const registryOption = (message: string): HostError => hostError('HOST_INVALID_OPTIONS', `the npm registry ${message}`, { details: { option: 'npm.registry' } });

/**
 * Splits the credentials off the registry URL. They go to npm as a userconfig
 * (read from a pipe, see {@link runNpm}) keyed by the registry's host and path (npm sends them to that registry
 * only): `_auth` for a user and password, base64 as npm wants it, and
 * `_authToken` for a token, which must be one line of printable characters,
 * since a line break in it would add settings of its own to the file.
 */
function registryAccess(registry: string, token: string | undefined): Result<RegistryAccess, HostError> {
  let url: URL;
  try {
    url = new URL(registry);
  } catch {
    // Not quoted: the text may hold a password.
    return err(registryOption('is not a URL'));
  }
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    return err(registryOption('has a user or password with a malformed % escape'));
  }
  url.username = '';
  url.password = '';
  const scope = `//${url.host}${url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`}`;
  const lines: string[] = [];
  if (user !== '' || password !== '') lines.push(`${scope}:_auth=${Buffer.from(`${user}:${password}`).toString('base64')}`);
  if (token !== undefined) {
    if (!/^[\x21-\x7e]+$/.test(token)) return err(hostError('HOST_INVALID_OPTIONS', 'the npm registry token must be one word of printable ASCII characters', { details: { option: 'npm.token' } }));
    lines.push(`${scope}:_authToken=${token}`);
  }
  // A user alone (`https://<token>@host/`) is how some registries take a token.
  const secrets = [password === '' ? user : password, `${user}:${password}`, token ?? ''].filter((value) => value !== '' && value !== ':');
  return ok({ url: url.href, npmrc: lines.map((line) => `${line}\n`).join(''), redactor: new SecretRedactor(secrets) });
}

// npm runs this instead of git: a dependency from a git repository is refused before git runs, and the attempt is recorded.
const REFUSING_GIT = '#!/bin/sh\nprintf \'%s\\n\' "$*" >> "$(dirname "$0")/git-refused"\nexit 128\n';

/**
 * The lockfile entries npm resolved from anywhere but `registry` with an
 * integrity hash: git, `file:` directories (links), remote tarball URLs,
 * local tarballs. The package itself may be the local tarball the caller
 * named (the staging project's one dependency), and a dependency bundled
 * inside a tarball is covered by that tarball's hash. Its peers sit at the
 * top level too, but are never the caller's tarball: a peer `file:` spec
 * would copy any npm tarball of the host's disk into the plugin's tree.
 */
function foreignSources(lock: Record<string, unknown> | undefined, registry: string, spec: NpmSpec): { path: string; resolved: string }[] {
  const packages = isRecord(lock?.['packages']) ? lock['packages'] : {};
  const base = registry.endsWith('/') ? registry : `${registry}/`;
  const root = isRecord(packages['']) && isRecord(packages['']['dependencies']) ? Object.keys(packages['']['dependencies']) : [];
  const named = new Set(spec.kind === 'tarball' ? root.map((name) => `node_modules/${name}`) : []);
  const foreign: { path: string; resolved: string }[] = [];
  for (const [path, entry] of Object.entries(packages)) {
    if (path === '' || !isRecord(entry) || entry['inBundle'] === true) continue;
    const resolved = typeof entry['resolved'] === 'string' ? entry['resolved'] : '';
    if (named.has(path) && resolved.startsWith('file:') && entry['link'] !== true) continue;
    if (entry['link'] === true || !resolved.startsWith(base) || typeof entry['integrity'] !== 'string') foreign.push({ path, resolved: resolved || String(entry['link'] === true ? 'link' : '') });
  }
  return foreign;
}

/** The version of `name` a lockfile of the staging project holds. */
function lockedVersion(lock: Record<string, unknown> | undefined, name: string): string | undefined {
  const packages = isRecord(lock?.['packages']) ? lock['packages'] : {};
  const entry = packages[`node_modules/${name}`];
  return isRecord(entry) && typeof entry['version'] === 'string' ? entry['version'] : undefined;
}

const foreignFailure = (target: string, registry: string, foreign: readonly { path: string; resolved: string }[]): HostError =>
  npmFailure('dependency_source', `dependencies of '${target}' resolve outside the registry ${registry} or without integrity: ${foreign.map((f) => `${f.path} (${f.resolved})`).join(', ')}`, {
    dependencies: foreign,
  });

const FAILED_REQUESTS = settings.failedRequestPatterns.map((pattern) => new RegExp(pattern, 'g'));

/**
 * A failed npm run whose stderr names a request it could not complete to a
 * URL outside the registry: a dependency from a tarball URL, which npm
 * fetches while it resolves the tree, before the lockfile can be checked.
 * It is the refusal the lockfile check would give had the fetch worked, not
 * a registry or network problem of the caller's (@sentry/node 9 depends on a
 * codeload.github.com tarball: every server using it fails here, and would
 * fail with the network too).
 */
function failedForeignRequest(failure: HostError, target: string, registry: string, refused?: string): HostError | undefined {
  const stderr = failure.details['stderr_tail'];
  if (typeof stderr !== 'string') return undefined;
  const base = registry.endsWith('/') ? registry : `${registry}/`;
  const url =
    refused ??
    FAILED_REQUESTS.flatMap((pattern) => [...stderr.matchAll(pattern)].map((match) => match[1] ?? '')).find((found) => /^https?:\/\//.test(found) && !found.startsWith(base));
  if (url === undefined) return undefined;
  return hostError(
    'PLUGIN_NPM_INSTALL_FAILED',
    refused === undefined
      ? `a dependency of '${target}' comes from ${url}, outside the registry ${registry}, and npm could not fetch it; it would be refused if it could (no registry integrity pins its bytes)`
      : `a dependency of '${target}' comes from ${url}, outside the registry ${registry}; it is refused, and the host never requested it (no registry integrity pins its bytes)`,
    {
      details: { reason: 'dependency_source', source: 'url', url, stderr_tail: stderr },
      cause: failure,
      hint: 'A package of its tree depends on a tarball URL instead of a registry version (details.url; npm ls or the package.json of the package naming it says which). The host installs registry packages only: install another version of the server, or repackage it with that dependency from the registry.',
    },
  );
}

/**
 * npm's failure when the registry-only proxy did not dial the registry: its
 * name resolved only to addresses the host alone reaches (loopback, the
 * host's own interfaces, link-local, metadata), which the proxy dials for no
 * name, since a hostile registry's DNS could answer them (originProxy.ts).
 */
function unreachableRegistry(failure: HostError, registry: string, hostOnly: readonly string[] = []): HostError | undefined {
  if (hostOnly.length === 0) return undefined;
  return hostError('PLUGIN_NPM_INSTALL_FAILED', `the registry ${registry} was not dialled: ${hostOnly.join('; ')}, which only the host reaches`, {
    details: { ...failure.details, reason: 'npm_failed', registry, host_only_answers: hostOnly },
    cause: failure,
    hint: 'The install proxy dials no loopback, link-local or own-interface address for a name (a registry\'s DNS could answer one). Name a registry on this machine as localhost (http://localhost:4873/) or by its address (http://127.0.0.1:4873/).',
  });
}

/**
 * Installs the package `spec` names, with its production dependencies, into
 * `work` (an empty directory of the staging area), using `work/.npm` for
 * npm's cache and configuration. Install scripts never run.
 */
export async function fetchNpmPackage(spec: NpmSpec, work: string, npm: NpmSettings = {}, limits: PackageLimits = DEFAULT_PACKAGE_LIMITS): Promise<Result<FetchedNpmPackage, HostError>> {
  const cli = npm.cli ?? bundledNpmCli();
  const found = await stat(cli).catch(() => undefined);
  if (found?.isFile() !== true) {
    return err(npmFailure('npm_unavailable', `the npm CLI was not found at ${cli}`, { cli }));
  }
  if (spec.kind === 'tarball') {
    const tarball = await stat(spec.path).catch(() => undefined);
    if (tarball?.isFile() !== true) return err(npmFailure('invalid_spec', `no npm tarball at ${spec.path}`, { path: spec.path }));
  }
  const access = registryAccess(npm.registry ?? settings.registry, npm.token);
  if (access.isErr()) return err(access.error);
  const { url: registry, npmrc, redactor } = access.value;
  const home = join(work, '.npm');
  const project = join(work, 'project');
  await mkdir(home, { recursive: true, mode: 0o700 });
  await mkdir(project, { mode: 0o700 });
  await writeFile(join(home, 'npmrc-global'), '');
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'mcp-plugin-host-staging', private: true }));
  await writeFile(join(home, 'git'), REFUSING_GIT, { mode: 0o755 });
  const target = spec.kind === 'registry' ? spec.spec : spec.path;
  const proxy = hostHasProxy() ? undefined : await startRegistryOnlyProxy(registry, settings.registryRedirectOrigins);
  try {
    return await fetchBehind(proxy, spec, { cli, home, project, registry, npmrc, redactor, target, limits });
  } finally {
    await proxy?.close();
  }
}

/** What {@link fetchBehind} runs npm with. */
interface NpmRun {
  readonly cli: string;
  readonly home: string;
  readonly project: string;
  readonly registry: string;
  readonly npmrc: string;
  readonly redactor: SecretRedactor;
  readonly target: string;
  readonly limits: PackageLimits;
}

/** The two npm runs of {@link fetchNpmPackage} and their checks, behind the registry-only proxy when there is one. */
async function fetchBehind(proxy: RegistryOnlyProxy | undefined, spec: NpmSpec, run: NpmRun): Promise<Result<FetchedNpmPackage, HostError>> {
  const { cli, home, project, registry, npmrc, redactor, target, limits } = run;
  const proxyArgs = proxy === undefined ? [] : ['--proxy', proxy.url, '--https-proxy', proxy.url];
  const installArgs = (what: string): string[] => ['install', what, ...settings.installFlags, '--cache', join(home, 'cache'), '--registry', registry, '--git', join(home, 'git'), ...proxyArgs];
  const npmEnvironment = (dir: string): NodeJS.ProcessEnv => npmEnvironmentOf(dir, proxy !== undefined, registry);
  // The tree is resolved first (lockfile only, nothing unpacked) and checked before npm fetches any package of it.
  const bounds = { project, cache: join(home, 'cache'), limits };
  const resolved = await runNpm(cli, [...installArgs(target), '--package-lock-only'], project, npmEnvironment(home), npmrc, redactor, bounds);
  if (existsSync(join(home, 'git-refused'))) {
    return err(npmFailure('dependency_source', `a dependency of '${target}' comes from a git repository, whose bytes no registry integrity pins; it is refused`, { source: 'git' }));
  }
  if (resolved.isErr()) return err(unreachableRegistry(resolved.error, registry, proxy?.hostOnly) ?? failedForeignRequest(resolved.error, target, registry, proxy?.refused[0]) ?? resolved.error);
  const lock = await readJson(join(project, 'package-lock.json'), limits.maxExtractedBytes);
  const foreign = foreignSources(lock, registry, spec);
  if (foreign.length > 0) return err(foreignFailure(target, registry, foreign));
  // A range or tag would be resolved again, and the registry may have published another version since: npm installs
  // the version the checked lockfile holds, and the lockfile it leaves is checked again.
  const checked = spec.kind === 'registry' ? lockedVersion(lock, spec.name) : target;
  if (checked === undefined) return err(npmFailure('layout_unexpected', `npm resolved no version of '${target}'`, { spec: target }));
  const ran = await runNpm(cli, installArgs(spec.kind === 'registry' ? `${spec.name}@${checked}` : target), project, npmEnvironment(home), npmrc, redactor, bounds);
  if (ran.isErr()) return err(failedForeignRequest(ran.error, target, registry, proxy?.refused[0]) ?? ran.error);
  const installedLock = await readJson(join(project, 'package-lock.json'), limits.maxExtractedBytes);
  const installed = foreignSources(installedLock, registry, spec);
  if (installed.length > 0) return err(foreignFailure(target, registry, installed));
  const manifest = await readJson(join(project, 'package.json'), settings.maxPackageJsonBytes);
  const dependencies = isRecord(manifest?.['dependencies']) ? Object.keys(manifest['dependencies']) : [];
  const name = dependencies[0];
  if (dependencies.length !== 1 || name === undefined) {
    return err(npmFailure('layout_unexpected', `npm recorded ${dependencies.length} dependencies for '${target}', expected exactly one`, { dependencies }));
  }
  const dir = join(project, 'node_modules', ...name.split('/'));
  const packageJson = await readJson(join(dir, 'package.json'), settings.maxPackageJsonBytes);
  const version = packageJson?.['version'];
  if (packageJson === undefined || typeof version !== 'string') {
    return err(npmFailure('layout_unexpected', `npm installed '${name}' without a readable package.json of at most ${settings.maxPackageJsonBytes} bytes at ${dir}`, { name }));
  }
  // A registry lists a version and its tarball separately, and npm does not compare the two: the package is the one npm resolved.
  if (spec.kind === 'registry' && (packageJson['name'] !== name || version !== checked)) {
    const claimed = `${String(packageJson['name'])}@${version}`;
    return err(
      npmFailure('package_mismatch', `the tarball the registry serves for '${name}@${checked}' has a package.json that says it is '${claimed}'; it is refused`, {
        resolved: `${name}@${checked}`,
        claimed,
      }),
    );
  }
  const peers = await adoptPeerDependencies(project, name, dir);
  if ('conflict' in peers) {
    return err(npmFailure('layout_unexpected', `npm installed '${peers.conflict}' beside '${name}' as a peer and inside it as a dependency`, { name, peer: peers.conflict }));
  }
  return ok({
    dir,
    name,
    version,
    packageJson,
    installScripts: packagesWithInstallScripts(installedLock),
    ...(spec.kind === 'registry' ? { registry: registry.endsWith('/') ? registry : `${registry}/` } : {}),
  });
}
