import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageFixturePlugin } from '../../fixtures/packagePlugin.js';

/** The repository root. */
export const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The CLI entry, run through tsx as a real subprocess. */
export const CLI_SOURCE = join(REPO, 'src/cli/main.ts');

/** What one CLI process did. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link runProcess}. */
export interface RunOptions {
  /** Extra environment (merged over a clean copy of this process's). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Text written to stdin (stdin is closed either way). */
  readonly input?: string;
}

/**
 * `#!/usr/bin/env <program>` interpreters are resolved on PATH at install,
 * and version-manager shims (pyenv, asdf) are shell scripts the binding
 * refuses; plugins are run with the system's real interpreters first.
 */
const PLUGIN_PATH = [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter);

/** The environment every CLI child starts from: real interpreters on PATH, no colour forcing, no inherited colour opt-outs. */
function childEnv(extra: Readonly<Record<string, string | undefined>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: PLUGIN_PATH };
  delete env.FORCE_COLOR;
  delete env.NO_COLOR;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** Runs a command to completion (stdout/stderr are pipes, so never a TTY). */
export function runProcess(command: string, args: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO, env: childEnv(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** Runs the CLI from source: `node --import tsx src/cli/main.ts ...args`. */
export function cli(args: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  return runProcess(process.execPath, ['--import', 'tsx', CLI_SOURCE, ...args], options);
}

/** Runs the CLI from source on a pseudo-terminal (util-linux `script`); types `answer` when `prompt` shows up. */
export function onTerminal(args: readonly string[], prompt: RegExp, answer: string): Promise<CliRun> {
  const quoted = [process.execPath, '--import', 'tsx', CLI_SOURCE, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', `PATH=/usr/bin:/bin ${quoted}`, '/dev/null'], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
    let transcript = '';
    let answered = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      transcript += d;
      if (!answered && prompt.test(transcript)) {
        answered = true;
        child.stdin.end(`${answer}\r`);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: transcript, stderr: '' }));
  });
}

/** Parses the single JSON document a `--json` run printed. */
export function json(run: CliRun): Record<string, unknown> {
  const lines = run.stdout.trim().split('\n');
  if (lines.length !== 1) throw new Error(`expected one JSON line on stdout, got ${lines.length}:\n${run.stdout}\nstderr:\n${run.stderr}`);
  return JSON.parse(lines[0] ?? '') as Record<string, unknown>;
}

/** A temporary directory removed by `dispose`. */
export async function tempDir(prefix: string): Promise<{ readonly path: string; dispose(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, dispose: () => rm(path, { recursive: true, force: true }) };
}

/** The hello fixture packaged for install (its Node entry bundled). */
export function packageHello(): Promise<string> {
  return packageFixturePlugin(join(REPO, 'fixtures/plugins/hello'), { bundle: ['bin/hello-mcp.mjs'] });
}

/**
 * Copies the package folder `from` to `to` and rewrites the copy's
 * manifest.json with what `edit` made of it (`edit` changes the parsed
 * manifest in place); returns `to`.
 */
export async function copyWithManifest(from: string, to: string, edit: (manifest: Record<string, unknown>) => void): Promise<string> {
  await cp(from, to, { recursive: true });
  const file = join(to, 'manifest.json');
  const manifest = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  edit(manifest);
  await writeFile(file, JSON.stringify(manifest));
  return to;
}

/** The credential the greeter fixture declares. */
export const GREETER_ENV = 'GREETER_TOKEN';

/**
 * `greeter`: the packaged hello server under another id, declaring one
 * credential (GREETER_TOKEN, alias greeter-token) and a canary that greets
 * "canary" — what setup, canary, quarantine and reload need.
 */
export async function packageGreeter(helloPackage: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plugin-pkg-greeter-'));
  await cp(helloPackage, dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const greeter = {
    ...manifest,
    plugin_id: 'greeter',
    name: 'Greeter',
    namespace_owner: 'io.example.greeter',
    requirements: {
      needs_user_creds: [GREETER_ENV],
      credential_descriptors: [
        { alias: 'greeter-token', env: GREETER_ENV, kind: 'api_key', display_name: 'Greeter token', setup_hint: 'Any non-empty text works for this fixture' },
      ],
      canary: { tool: 'hello', args: { name: 'canary' } },
    },
  };
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(greeter, null, 2));
  return dir;
}

/** `guarded`: the packaged hello server with its tool declared a high_stakes_write `write` operation. */
export async function packageGuarded(helloPackage: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plugin-pkg-guarded-'));
  await cp(helloPackage, dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const guarded = {
    ...manifest,
    plugin_id: 'guarded',
    name: 'Guarded',
    namespace_owner: 'io.example.guarded',
    advertised_tools: [{ name: 'hello', description: 'Greets, but counts as a write', risk_class: 'write', confirmation_policy: 'high_stakes_write' }],
  };
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(guarded, null, 2));
  return dir;
}

/** A manifest breaking five rules at once (for "every violation is printed"). */
export const MANY_VIOLATIONS_MANIFEST = {
  manifest_schema_version: 1,
  plugin_id: 'Bad_Id',
  name: '',
  version: '0.1.0',
  namespace_owner: 'io.example.bad',
  shape: 'mcp-plugin',
  executable: '/usr/bin/bad',
  advertised_tools: [{ name: 'x', risk_class: 'dangerous' }],
  declared_capabilities: { network: false, fs_write_dir: '../up', env_allow: [] },
};

/** The pointers {@link MANY_VIOLATIONS_MANIFEST} violates. */
export const MANY_VIOLATIONS_POINTERS = ['/advertised_tools/0/risk_class', '/declared_capabilities/fs_write_dir', '/executable', '/name', '/plugin_id'];
