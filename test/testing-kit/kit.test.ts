// The testing kit against real plugin directories, the real sandbox and real processes.
import { AssertionError } from 'node:assert';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PluginHost } from '../../src/index.js';
import { expectHostError, expectOk, startPlugin, validatePluginDir } from '../../src/testing/index.js';
import { FaultPackages } from '../support/faultPackages.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/plugin-author/plugin/', import.meta.url));
let scratch: string;

/** A copy of the example plugin with its manifest edited. */
async function exampleWith(edit: (manifest: Record<string, any>) => void, name: string): Promise<string> {
  const dir = join(scratch, name);
  await cp(EXAMPLE, dir, { recursive: true, filter: (src) => !src.includes('node_modules') });
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Record<string, any>;
  edit(manifest);
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

/** The code a real host gives when installing `dir`. */
async function hostInstallCode(dir: string): Promise<string> {
  const profileDir = await mkdtemp(join(tmpdir(), 'kit-host-'));
  const host = (await PluginHost.open({ profileDir, profileKind: 'dev' }))._unsafeUnwrap();
  try {
    const installed = await host.install(dir, { canary: false });
    return installed.isOk() ? 'ok' : installed.error.code;
  } finally {
    await host.close();
    await rm(profileDir, { recursive: true, force: true });
  }
}

/** Processes whose command line mentions `text`. */
function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid)
    .filter((e) => {
      try {
        return readFileSync(`/proc/${e}/cmdline`, 'latin1').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'kit-test-'));
});
afterAll(async () => rm(scratch, { recursive: true, force: true }));

describe('validatePluginDir', () => {
  it('reports every manifest violation with its pointer and the code the host gives', async () => {
    const dir = await exampleWith((m) => {
      m.declared_capabilities.env_allow = ['AWS_SECRET_ACCESS_KEY'];
      delete m.namespace_owner;
    }, 'two-violations');
    const report = expectOk(await validatePluginDir(dir));
    expect(report.ok).toBe(false);
    expect(report.violations.map((v) => [v.code, v.pointer])).toEqual([
      ['PLUGIN_NAMESPACE_CONFLICT', '/namespace_owner'],
      ['PLUGIN_ENV_PROHIBITED', '/declared_capabilities/env_allow'],
    ]);
    expect(await hostInstallCode(dir)).toBe(report.violations[0]!.code);
  });

  it('reports a missing manifest as a package violation', async () => {
    const dir = join(scratch, 'empty');
    await cp(join(EXAMPLE, 'bin'), join(dir, 'bin'), { recursive: true });
    const report = expectOk(await validatePluginDir(dir));
    expect(report.violations).toEqual([expect.objectContaining({ code: 'PLUGIN_MANIFEST_NOT_FOUND', stage: 'package', pointer: '' })]);
    expect(await hostInstallCode(dir)).toBe('PLUGIN_MANIFEST_NOT_FOUND');
  });

  it('finds what only an install finds: a shell wrapper as the executable', async () => {
    const dir = await exampleWith((m) => {
      m.executable = 'bin/run.sh';
    }, 'shell-wrapper');
    await writeFile(join(dir, 'bin', 'run.sh'), '#!/bin/sh\nexec node bin/word-tools.mjs\n', { mode: 0o755 });
    const report = expectOk(await validatePluginDir(dir));
    expect(report.violations).toEqual([expect.objectContaining({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', stage: 'install' })]);
    expect(await hostInstallCode(dir)).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(expectOk(await validatePluginDir(dir, { install: false })).ok).toBe(true);
  });

  it('passes a valid plugin and leaves no scratch profile behind', async () => {
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith('mcp-plugin-host-testing-')).length;
    const report = expectOk(await validatePluginDir(EXAMPLE));
    expect(report).toMatchObject({ ok: true, pluginId: 'word-tools', manifestFile: 'manifest.json', violations: [] });
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith('mcp-plugin-host-testing-')).length).toBeLessThanOrEqual(before);
  });
});

describe('startPlugin', () => {
  it('runs the plugin active, sandboxed, callable, and close() stops it and deletes the profile', async () => {
    const plugin = expectOk(await startPlugin(EXAMPLE));
    const info = expectOk(await plugin.info());
    expect(info.status).toBe('active');
    expect(info.enforced_capabilities).toMatchObject({ enforced: true, network: false });
    const result = expectOk(await plugin.call('shout', { text: 'hi' }));
    expect(JSON.stringify(result.value)).toContain('HI');
    expect(processesMentioning(plugin.profileDir).length).toBeGreaterThan(0);
    await plugin.close();
    expect(existsSync(plugin.profileDir)).toBe(false);
    expect(processesMentioning(plugin.profileDir)).toEqual([]);
  });

  it('expectToolsMatchManifest fails naming the declared tool the plugin does not list, as the host refuses its calls', async () => {
    const dir = await exampleWith((m) => {
      m.advertised_tools.push({ name: 'translate', description: 'Not implemented', risk_class: 'read' });
    }, 'undeclared');
    const plugin = expectOk(await startPlugin(dir));
    try {
      const failure = await plugin.expectToolsMatchManifest().catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(AssertionError);
      expect((failure as AssertionError).message).toContain('PLUGIN_TOOLS_MISMATCH');
      expect((failure as AssertionError).message).toContain('misses declared tools [translate]');
      // The failed start counted toward quarantine, as any start does: the call is refused, naming why.
      const refused = expectHostError(await plugin.call('shout', { text: 'x' }), 'VARIANT_QUARANTINED');
      expect(refused.details).toMatchObject({ last_error_code: 'PLUGIN_TOOLS_MISMATCH' });
    } finally {
      await plugin.close();
    }
  });

  it('holds credentials in memory: with them the plugin is active, without them it needs configuration', async () => {
    const dir = await exampleWith((m) => {
      m.requirements = {
        needs_user_creds: ['WORD_TOOLS_TOKEN'],
        credential_descriptors: [{ alias: 'token', env: 'WORD_TOOLS_TOKEN', kind: 'api_key', display_name: 'Token', setup_hint: 'Any value' }],
      };
    }, 'credentials');
    const configured = expectOk(await startPlugin(dir, { credentials: { WORD_TOOLS_TOKEN: 'secret' } }));
    const unconfigured = expectOk(await startPlugin(dir));
    try {
      expect(expectOk(await configured.info()).status).toBe('active');
      expectOk(await configured.call('count_words', { text: 'a b' }));
      expect(expectOk(await unconfigured.info()).status).toBe('needs_configuration');
      expectHostError(await unconfigured.call('count_words', { text: 'a b' }), 'PLUGIN_NEEDS_CONFIGURATION');
      expect(readdirSync(configured.profileDir, { recursive: true }).some((p) => String(p).includes('secrets'))).toBe(false);
    } finally {
      await configured.close();
      await unconfigured.close();
    }
  });

  it('fails with the install code and leaves nothing behind when the plugin cannot be installed', async () => {
    const dir = await exampleWith((m) => {
      m.declared_capabilities.env_allow = ['AWS_SECRET_ACCESS_KEY'];
    }, 'not-installable');
    const before = readdirSync(tmpdir()).filter((n) => n.startsWith('mcp-plugin-host-testing-')).length;
    expectHostError(await startPlugin(dir), 'PLUGIN_ENV_PROHIBITED');
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith('mcp-plugin-host-testing-')).length).toBeLessThanOrEqual(before);
  });
});

describe('listTools across protocols', () => {
  let packages: FaultPackages;
  beforeAll(async () => {
    packages = await FaultPackages.build(['ndjson-rpc', 'handshake']);
  }, 120_000);
  afterAll(async () => packages?.dispose());

  it('returns the declared methods of an ndjson-rpc plugin, which has no discovery', async () => {
    const plugin = expectOk(await startPlugin(await packages.package('ndjson-rpc', { pluginId: 'kit-ndjson', faulty: false })));
    try {
      expect(expectOk(await plugin.listTools()).map((t) => t.name)).toEqual(['echo', 'work']);
      expect(expectOk(await plugin.call('echo', { message: 'x' })).value).toEqual({ message: 'x' });
    } finally {
      await plugin.close();
    }
  });

  it("launches a handshake plugin and returns its handshake's exposed tools", async () => {
    const plugin = expectOk(await startPlugin(await packages.package('handshake', { pluginId: 'kit-handshake', faulty: false })));
    try {
      const tools = await plugin.expectToolsMatchManifest();
      expect(tools.map((t) => t.name)).toEqual(['echo', 'work']);
    } finally {
      await plugin.close();
    }
  });

  it('reports a plugin that crashes at start through canary and call with the host codes', async () => {
    const plugin = expectOk(
      await startPlugin(await packages.package('ndjson-rpc', { pluginId: 'kit-crashing', faulty: true }), { env: { FAULT_MODE: 'crash-at-start' } }),
    );
    try {
      const crashed = await plugin.call('echo', { message: 'x' });
      expectHostError(crashed, 'PLUGIN_CRASHED');
      // What a plugin author's failing test prints: the crash's own stderr, not just the code.
      expect(() => expectOk(crashed)).toThrow(/plugin stderr \(last lines\):\n.*fault\[crash-at-start\]: crashing at start/);
      // An ndjson-rpc crash is sticky by default (the mcptest protocol): the next call reports it again.
      expectHostError(await plugin.call('echo', { message: 'x' }), 'PLUGIN_CRASHED');
    } finally {
      await plugin.close();
    }
  });
});
