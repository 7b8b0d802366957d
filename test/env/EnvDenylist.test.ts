import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EnvDenylist, DEFAULT_ENV_PASS_THROUGH, prohibitedEnvMessage, type RejectedEnvEntry } from '../../src/env/EnvDenylist.js';
import { HostError } from '../../src/errors/HostError.js';
import { silentLogger, type Logger } from '../../src/ports/ports.js';

const fixtures = join(import.meta.dirname, 'fixtures');
const printEnv = join(fixtures, 'print-env.mjs');
const repoRoot = join(import.meta.dirname, '..', '..');

function entriesOf(error: HostError): RejectedEnvEntry[] {
  return error.details.entries as RejectedEnvEntry[];
}

function runPrintEnv(env: Record<string, string>, marker?: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, marker === undefined ? [printEnv] : [printEnv, marker], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as Record<string, string>) : reject(new Error(`exit ${code}`))));
  });
}

function recordingLogger(): Logger & { warnings: Array<{ fields: Record<string, unknown>; message: string }> } {
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const discard = (): void => undefined;
  return { warnings, debug: discard, info: discard, error: discard, warn: (fields, message) => warnings.push({ fields, message }) };
}

describe('env prohibited (prefix and exact)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'env-denylist-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Stands in for the install path: check first, start the plugin only when the check passes. */
  async function installAndStart(pluginId: string, needsUserCreds: string[], marker: string): Promise<HostError | undefined> {
    const checked = new EnvDenylist().check(pluginId, needsUserCreds, 'needs_user_creds');
    if (checked.isErr()) return checked.error;
    await runPrintEnv({ PATH: process.env.PATH ?? '' }, marker);
    return undefined;
  }

  it('TestPluginEnvProhibited: GUM_PROFILE in needs_user_creds fails with the canonical message and the plugin never starts', async () => {
    const manifest = parseToml(readFileSync(join(fixtures, 'gum-profile-plugin.toml'), 'utf8')) as {
      plugin: { name: string };
      requirements: { needs_user_creds: string[] };
    };
    const marker = join(dir, 'started');
    const error = await installAndStart(manifest.plugin.name, manifest.requirements.needs_user_creds, marker);
    expect(error?.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(error?.message).toBe("PLUGIN_ENV_PROHIBITED: needs_user_creds entry 'GUM_PROFILE' on plugin 'profile-thief' is a prohibited env var name.");
    expect(existsSync(marker)).toBe(false);
  });

  it('starts the same plugin when its needs_user_creds are allowed (so the marker proves the gate)', async () => {
    const marker = join(dir, 'started');
    expect(await installAndStart('profile-thief', ['THIEF_API_TOKEN'], marker)).toBeUndefined();
    expect(existsSync(marker)).toBe(true);
  });

  it.each(['GOOGLE_APPLICATION_CREDENTIALS', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY'])('rejects the contract exact name %s', (name) => {
    const result = new EnvDenylist().check('fli', [name], 'needs_user_creds');
    expect(result._unsafeUnwrapErr().message).toBe(prohibitedEnvMessage('needs_user_creds', name, 'fli'));
    expect(entriesOf(result._unsafeUnwrapErr())[0]?.rule).toEqual({ kind: 'exact', name });
  });

  it.each(['GUM_', 'GUM_PROFILE', 'GUM_CONFIG_DIR', '_GUM', '_GUMX', '_GUM_TOKEN'])('rejects %s by the GUM preset prefix rules', (name) => {
    const denylist = new EnvDenylist({ preset: 'gum' });
    expect(denylist.ruleFor(name)?.kind).toBe('prefix');
    expect(denylist.check('fli', [name], 'needs_user_creds')._unsafeUnwrapErr().code).toBe('PLUGIN_ENV_PROHIBITED');
  });

  it('uses the GUM preset by default', () => {
    expect(new EnvDenylist().isProhibited('GUM_PROFILE')).toBe(true);
  });

  it.each(['gum_profile', 'Gum_PROFILE', 'GUMPROFILE', '_gum', 'openai_api_key', 'OpenAI_API_KEY', 'OPENAI_API_KEY_2', 'MY_OPENAI_API_KEY'])(
    'matches case-sensitively and exactly: %s is allowed',
    (name) => {
      expect(new EnvDenylist().check('fli', [name], 'needs_user_creds').isOk()).toBe(true);
    },
  );

  it.each([
    'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_ACCESS_KEY_ID', 'AZURE_CLIENT_SECRET', 'GITHUB_TOKEN', 'GH_TOKEN',
    'GITLAB_TOKEN', 'NPM_TOKEN', 'HF_TOKEN', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'MISTRAL_API_KEY', 'COHERE_API_KEY',
    'GROQ_API_KEY', 'DEEPSEEK_API_KEY', 'XAI_API_KEY', 'OPENROUTER_API_KEY', 'SSH_AUTH_SOCK', 'DOCKER_HOST',
    // A host's own model and CI credentials (review R6 N4): a plugin run inside a CI job or an agent runtime never sees them.
    'AWS_BEARER_TOKEN_BEDROCK', 'CLAUDE_CODE_OAUTH_TOKEN', 'ACTIONS_RUNTIME_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN',
    'ACTIONS_ID_TOKEN_REQUEST_URL', 'CI_JOB_TOKEN', 'CI_JOB_JWT', 'CI_JOB_JWT_V2', 'CI_REGISTRY_PASSWORD', 'SYSTEM_ACCESSTOKEN',
    'BUILDKITE_AGENT_ACCESS_TOKEN', 'CIRCLE_OIDC_TOKEN', 'CIRCLE_OIDC_TOKEN_V2', 'KRB5CCNAME',
  ])('rejects the well-known secret %s', (name) => {
    expect(new EnvDenylist({ preset: 'neutral' }).ruleFor(name)).toEqual({ kind: 'exact', name });
  });

  it.each(['LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'DYLD_INSERT_LIBRARIES', 'NODE_OPTIONS', 'NODE_COMPILE_CACHE', 'BASH_FUNC_ls%%', 'PYTHONPATH'])(
    'rejects the loader-injection name %s',
    (name) => {
      expect(new EnvDenylist({ preset: 'neutral' }).isProhibited(name)).toBe(true);
    },
  );

  it.each(['npm_config__authToken', 'NPM_CONFIG__AUTH', 'npm_config__password', 'npm_config_//registry.example.com/:_authToken', 'NPM_CONFIG_//npm.pkg.github.com/:_authToken'])(
    "rejects npm's environment form of a registry credential, %s",
    (name) => {
      expect(new EnvDenylist({ preset: 'neutral' }).isProhibited(name)).toBe(true);
    },
  );

  it('keeps npm settings that are not credentials', () => {
    for (const name of ['npm_config_registry', 'NPM_CONFIG_CACHE', 'npm_config_user_agent']) expect(new EnvDenylist({ preset: 'neutral' }).isProhibited(name)).toBe(false);
  });

  it('names env_allow in the same canonical form for env_allow entries', () => {
    const error = new EnvDenylist().check('fli', ['FLI_USER_AGENT', 'OPENAI_API_KEY'], 'env_allow')._unsafeUnwrapErr();
    expect(error.message).toBe("PLUGIN_ENV_PROHIBITED: env_allow entry 'OPENAI_API_KEY' on plugin 'fli' is a prohibited env var name.");
    expect(error.details.field).toBe('env_allow');
  });

  it('reports every prohibited name once, one canonical line each, in declaration order', () => {
    const error = new EnvDenylist()
      .check('fli', ['OK_NAME', 'GUM_PROFILE', 'ANTHROPIC_API_KEY', 'GUM_PROFILE', 'LD_PRELOAD'], 'needs_user_creds')
      ._unsafeUnwrapErr();
    expect(entriesOf(error).map((e) => e.name)).toEqual(['GUM_PROFILE', 'ANTHROPIC_API_KEY', 'LD_PRELOAD']);
    expect(error.message.split('\n')).toEqual([
      prohibitedEnvMessage('needs_user_creds', 'GUM_PROFILE', 'fli'),
      prohibitedEnvMessage('needs_user_creds', 'ANTHROPIC_API_KEY', 'fli'),
      prohibitedEnvMessage('needs_user_creds', 'LD_PRELOAD', 'fli'),
    ]);
    expect(error.details.plugin_id).toBe('fli');
  });

  it('rejects names that cannot be env names: empty, containing = or NUL', () => {
    const error = new EnvDenylist().check('fli', ['', 'A=B', 'A\0B\u001b[31m'], 'env_allow')._unsafeUnwrapErr();
    expect(error.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(entriesOf(error).map((e) => [e.name, e.reason])).toEqual([
      ['', 'invalid_name'],
      ['A=B', 'invalid_name'],
      ['A\\x00B\\x1b[31m', 'invalid_name'],
    ]);
    expect(error.message).not.toContain('\0');
    expect(error.message).not.toContain('\u001b');
    expect(error.message.split('\n')[1]).toBe("PLUGIN_ENV_PROHIBITED: env_allow entry 'A=B' on plugin 'fli' is not a valid env var name.");
  });

  it('passes a manifest whose names are all allowed', () => {
    expect(new EnvDenylist().check('fli', ['FLI_USER_AGENT', 'FLI_TOKEN'], 'env_allow').isOk()).toBe(true);
    expect(new EnvDenylist().check('fli', [], 'needs_user_creds').isOk()).toBe(true);
  });

  it('drops the GUM prefixes in the neutral preset but keeps the base rules', () => {
    const neutral = new EnvDenylist({ preset: 'neutral' });
    expect(neutral.isProhibited('GUM_PROFILE')).toBe(false);
    expect(neutral.isProhibited('_GUM')).toBe(false);
    expect(neutral.isProhibited('OPENAI_API_KEY')).toBe(true);
  });

  it("adds the host's own prefix and exact names, case-sensitively", () => {
    const denylist = new EnvDenylist({ preset: 'neutral', extraPrefixes: ['MYAPP_'], extraExact: ['CORP_VPN_TOKEN'] });
    expect(denylist.ruleFor('MYAPP_SESSION')).toEqual({ kind: 'prefix', prefix: 'MYAPP_' });
    expect(denylist.isProhibited('myapp_session')).toBe(false);
    expect(denylist.ruleFor('CORP_VPN_TOKEN')).toEqual({ kind: 'exact', name: 'CORP_VPN_TOKEN' });
    expect(denylist.isProhibited('CORP_VPN_TOKEN_2')).toBe(false);
    expect(denylist.check('x', ['MYAPP_SESSION'], 'env_allow')._unsafeUnwrapErr().message).toBe(
      "PLUGIN_ENV_PROHIBITED: env_allow entry 'MYAPP_SESSION' on plugin 'x' is a prohibited env var name.",
    );
  });

  it.each([
    [{ extraPrefixes: [''] }],
    [{ extraPrefixes: ['A=B'] }],
    [{ extraExact: ['X\0'] }],
    [{ preset: 'nope' as 'gum' }],
  ])('refuses invalid options %j with HOST_INVALID_OPTIONS', (options) => {
    expect(EnvDenylist.create(options)._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(() => new EnvDenylist(options)).toThrow(HostError);
  });

  it('reads its rules from etc/env-denylist.json, the single source of truth', () => {
    const file = JSON.parse(readFileSync(join(repoRoot, 'etc', 'env-denylist.json'), 'utf8')) as {
      exact: string[];
      prefixes: string[];
      presets: Record<string, { exact: string[]; prefixes: string[] }>;
    };
    for (const name of ['GOOGLE_APPLICATION_CREDENTIALS', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']) expect(file.exact).toContain(name);
    expect(file.presets.gum?.prefixes).toEqual(['GUM_', '_GUM']);
    const gum = new EnvDenylist({ preset: 'gum' });
    expect(gum.exactNames).toEqual([...new Set([...file.exact, ...(file.presets.gum?.exact ?? [])])].sort());
    expect(gum.prefixes).toEqual([...file.prefixes, ...(file.presets.gum?.prefixes ?? [])].sort());
  });
});

describe('buildEnv', () => {
  const parentEnv = {
    PATH: '/usr/bin:/bin',
    HOME: '/home/u',
    TMPDIR: '/tmp',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    LC_CTYPE: 'C.UTF-8',
    USER: 'u',
    AWS_REGION: 'eu-west-1',
    OPENAI_API_KEY: 'sk-parent',
    GUM_PROFILE: 'work',
    LD_PRELOAD: '/tmp/evil.so',
    FLI_USER_AGENT: 'fli/1',
    UNSET: undefined,
  };

  it('copies only the default pass-through names from the parent environment', () => {
    expect(DEFAULT_ENV_PASS_THROUGH.slice(0, 4)).toEqual(['PATH', 'HOME', 'TMPDIR', 'LANG']);
    const env = new EnvDenylist().buildEnv({ parentEnv })._unsafeUnwrap();
    expect(env).toEqual({ PATH: '/usr/bin:/bin', HOME: '/home/u', TMPDIR: '/tmp', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', LC_CTYPE: 'C.UTF-8' });
  });

  // sshd's usual AcceptEnv LANG LC_* lets an ssh client set any LC_ name to any value on the host.
  it('passes the locale categories by name, and only values that look like locale names', () => {
    const categories = ['LC_ALL', 'LC_COLLATE', 'LC_CTYPE', 'LC_MESSAGES', 'LC_MONETARY', 'LC_NUMERIC', 'LC_TIME', 'LC_ADDRESS', 'LC_IDENTIFICATION', 'LC_MEASUREMENT', 'LC_NAME', 'LC_PAPER', 'LC_TELEPHONE'];
    expect([...DEFAULT_ENV_PASS_THROUGH].sort()).toEqual(['HOME', 'LANG', 'PATH', 'TMPDIR', ...categories].sort());
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (fields: unknown) => void warnings.push(fields) };
    const locales = { LANG: 'sr_RS.UTF-8@latin', LC_ALL: 'en_US.UTF-8', LC_TIME: 'es_419.utf8', LC_MESSAGES: 'POSIX', LC_PAPER: 'sr_RS@latin', LC_NUMERIC: 'C' };
    const sent = { LC_SSH_TOKEN: 'ghp_from-an-ssh-client', LC_TERMINAL: 'iTerm2', LC_CTYPE: '/tmp/evil-locale', LC_COLLATE: 'en_US.UTF-8; rm -rf ~', LC_NAME: '' };
    const env = new EnvDenylist({ logger }).buildEnv({ parentEnv: { PATH: '/usr/bin', ...locales, ...sent }, pluginId: 'p' })._unsafeUnwrap();
    expect(env).toEqual({ PATH: '/usr/bin', ...locales });
    expect(warnings).toEqual([{ plugin_id: 'p', names: ['LC_CTYPE', 'LC_COLLATE', 'LC_NAME'] }]);
    // A name the plugin is granted is the user's to give as it is; a host that asks for every LC_ name gets them.
    expect(new EnvDenylist().buildEnv({ parentEnv: sent, envAllow: ['LC_CTYPE', 'LC_TERMINAL'] })._unsafeUnwrap()).toEqual({ LC_CTYPE: '/tmp/evil-locale', LC_TERMINAL: 'iTerm2' });
    expect(new EnvDenylist().buildEnv({ parentEnv: sent, allowPassThrough: ['LC_*'] })._unsafeUnwrap()).toEqual({ LC_SSH_TOKEN: 'ghp_from-an-ssh-client', LC_TERMINAL: 'iTerm2' });
  });

  it('adds env_allow names present in the parent and skips absent or unset ones', () => {
    const env = new EnvDenylist().buildEnv({ parentEnv, envAllow: ['FLI_USER_AGENT', 'AWS_REGION', 'MISSING', 'UNSET'] })._unsafeUnwrap();
    expect(env.FLI_USER_AGENT).toBe('fli/1');
    expect(env.AWS_REGION).toBe('eu-west-1');
    expect(Object.hasOwn(env, 'MISSING')).toBe(false);
    expect(Object.hasOwn(env, 'UNSET')).toBe(false);
    expect(Object.hasOwn(env, 'USER')).toBe(false);
  });

  it('layers credentials over the parent and fixed values over everything', () => {
    const env = new EnvDenylist()
      .buildEnv({
        parentEnv,
        envAllow: ['FLI_USER_AGENT'],
        credentials: { FLI_USER_AGENT: 'from-store', FLI_TOKEN: 'tok' },
        fixed: { FLI_TOKEN: 'fixed', HOME: '/data/fli' },
      })
      ._unsafeUnwrap();
    expect(env.FLI_USER_AGENT).toBe('from-store');
    expect(env.FLI_TOKEN).toBe('fixed');
    expect(env.HOME).toBe('/data/fli');
  });

  it('replaces the default pass-through list when the host gives one', () => {
    const env = new EnvDenylist().buildEnv({ parentEnv, allowPassThrough: ['PATH', 'AWS_*'] })._unsafeUnwrap();
    expect(env).toEqual({ PATH: '/usr/bin:/bin', AWS_REGION: 'eu-west-1' });
  });

  it('scrubs denylisted names whatever their source and warns with names only', () => {
    const logger = recordingLogger();
    const env = new EnvDenylist({ logger, extraPrefixes: ['MYAPP_'] })
      .buildEnv({
        pluginId: 'fli',
        parentEnv: { ...parentEnv, MYAPP_SECRET: 'm' },
        allowPassThrough: [...DEFAULT_ENV_PASS_THROUGH, 'LD_*', 'MYAPP_*'],
        envAllow: ['OPENAI_API_KEY', 'GUM_PROFILE'],
        credentials: { ANTHROPIC_API_KEY: 'sk-store', _GUM_TOKEN: 'g' },
        fixed: { NODE_OPTIONS: '--require /tmp/evil.js' },
      })
      ._unsafeUnwrap();
    for (const name of ['OPENAI_API_KEY', 'GUM_PROFILE', 'ANTHROPIC_API_KEY', '_GUM_TOKEN', 'NODE_OPTIONS', 'LD_PRELOAD', 'MYAPP_SECRET']) {
      expect(Object.hasOwn(env, name), name).toBe(false);
    }
    expect(env.PATH).toBe('/usr/bin:/bin');
    expect(logger.warnings).toHaveLength(1);
    const logged = JSON.stringify(logger.warnings[0]);
    expect(logged).toContain('OPENAI_API_KEY');
    expect(logged).toContain('"plugin_id":"fli"');
    for (const secret of ['sk-parent', 'sk-store', 'evil']) expect(logged).not.toContain(secret);
  });

  it('does not warn when nothing was scrubbed', () => {
    const logger = recordingLogger();
    new EnvDenylist({ logger }).buildEnv({ parentEnv })._unsafeUnwrap();
    expect(logger.warnings).toEqual([]);
  });

  it.each(['*', '', 'A=*', 'A\0B'])('refuses the pass-through pattern %j', (pattern) => {
    const error = new EnvDenylist().buildEnv({ parentEnv, allowPassThrough: [pattern] })._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
  });

  it('refuses invalid env_allow and credential names as PLUGIN_ENV_PROHIBITED', () => {
    const denylist = new EnvDenylist();
    const allow = denylist.buildEnv({ parentEnv, envAllow: ['A=B'], pluginId: 'fli' })._unsafeUnwrapErr();
    expect(allow.code).toBe('PLUGIN_ENV_PROHIBITED');
    expect(allow.message).toBe("PLUGIN_ENV_PROHIBITED: env_allow entry 'A=B' on plugin 'fli' is not a valid env var name.");
    const cred = denylist.buildEnv({ parentEnv, credentials: { '': 'x' } })._unsafeUnwrapErr();
    expect(cred.message).toBe("PLUGIN_ENV_PROHIBITED: needs_user_creds entry '' is not a valid env var name.");
  });

  it('refuses NUL in values without echoing the value, and invalid fixed names', () => {
    const denylist = new EnvDenylist();
    const cred = denylist.buildEnv({ parentEnv, credentials: { FLI_TOKEN: 'top\0secret' } })._unsafeUnwrapErr();
    expect(cred.code).toBe('HOST_INVALID_OPTIONS');
    expect(cred.message).toContain('FLI_TOKEN');
    expect(cred.message).not.toContain('secret');
    expect(denylist.buildEnv({ parentEnv, fixed: { A: 'b\0' } })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(denylist.buildEnv({ parentEnv, fixed: { 'A=B': 'b' } })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(denylist.buildEnv({ parentEnv: { PATH: 'a\0b' } })._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('never reads inherited properties and keeps odd names as own properties', () => {
    const parent = Object.assign(Object.create(null) as Record<string, string>, { constructor: 'c', 'LC_A=B': 'bad-name' });
    Object.defineProperty(parent, '__proto__', { value: 'p', enumerable: true });
    const env = new EnvDenylist().buildEnv({ parentEnv: parent, envAllow: ['__proto__', 'constructor', 'toString'] })._unsafeUnwrap();
    expect(Object.getPrototypeOf(env)).toBe(Object.prototype);
    expect(Object.keys(env).sort()).toEqual(['__proto__', 'constructor']);
    expect(Object.hasOwn(env, 'toString')).toBe(false);
  });

  it('is exactly the environment a spawned plugin process sees', async () => {
    const env = new EnvDenylist()
      .buildEnv({
        parentEnv: { ...process.env, OPENAI_API_KEY: 'sk-parent', GUM_PROFILE: 'work', SOME_HOST_VAR: 'x', GITLAB_TOKEN: 'glpat-parent' },
        envAllow: ['GUM_PROFILE', 'GITLAB_TOKEN'],
        credentials: { FLI_TOKEN: 'tok', GITHUB_TOKEN: 'ghp', ANTHROPIC_API_KEY: 'sk-stored' },
      })
      ._unsafeUnwrap();
    const seen = await runPrintEnv(env);
    expect(seen).toEqual(env);
    expect(seen.FLI_TOKEN).toBe('tok');
    // GITHUB_TOKEN is on the host's extension of the list: a value stored for the plugin reaches it, the host's never does.
    expect(seen.GITHUB_TOKEN).toBe('ghp');
    for (const name of ['OPENAI_API_KEY', 'GUM_PROFILE', 'SOME_HOST_VAR', 'GITLAB_TOKEN', 'ANTHROPIC_API_KEY']) expect(Object.hasOwn(seen, name), name).toBe(false);
  });
});
