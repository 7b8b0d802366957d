import { readSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hostError } from '../../../src/errors/HostError.js';
import { CaptureServer, type CapturedTool } from '../../../src/shapes/esm/CaptureServer.js';
import { orderByDependencies } from '../../../src/shapes/esm/dependencyOrder.js';
import { discoverEsmPlugins } from '../../../src/shapes/esm/discoverEsmPlugins.js';
import { DEFAULT_ESM_LOADER_FLAGS, esmLoaderOptionsFromEnv } from '../../../src/shapes/esm/EsmLoaderOptions.js';
import { parseRunnerArguments, runnerArguments, type EsmRunnerSettings } from '../../../src/shapes/esm/runnerArgs.js';
import { esmRunnerFailure, formatRunnerReport, loadFailedReport, parseRunnerReport } from '../../../src/shapes/esm/runnerDiagnostic.js';
import { issueRunnerReportSeal } from '../../../src/shapes/esm/runnerReportSeal.js';
import { schemaKind } from '../../../src/shapes/esm/schemaKinds.js';
import { toolProblems } from '../../../src/shapes/esm/validateTools.js';

const noop = async () => ({ content: [] });

describe('orderByDependencies', () => {
  it('puts dependencies first and keeps input order among independent plugins', () => {
    const { order, failed } = orderByDependencies([
      { id: 'app', dependencies: ['lib', 'util'] },
      { id: 'solo', dependencies: [] },
      { id: 'lib', dependencies: ['util'] },
      { id: 'util', dependencies: [] },
    ]);
    expect(order).toEqual(['util', 'lib', 'app', 'solo']);
    expect(failed.size).toBe(0);
  });

  it('names a three-plugin cycle from where it was entered, and fails only its members and dependents', () => {
    const { order, failed } = orderByDependencies([
      { id: 'a', dependencies: ['b'] },
      { id: 'b', dependencies: ['c'] },
      { id: 'c', dependencies: ['a'] },
      { id: 'd', dependencies: ['c'] },
      { id: 'e', dependencies: [] },
    ]);
    expect(order).toEqual(['e']);
    for (const id of ['a', 'b', 'c']) {
      expect(failed.get(id)?.code).toBe('PLUGIN_DEPENDENCY_CYCLE');
      expect(failed.get(id)?.message).toContain('dependency cycle: a -> b -> c -> a');
    }
    expect(failed.get('d')?.code).toBe('PLUGIN_DEPENDENCY_MISSING');
  });

  it('reports a self-dependency as the cycle A -> A', () => {
    expect(orderByDependencies([{ id: 'self', dependencies: ['self'] }]).failed.get('self')?.message).toContain('self -> self');
  });

  it('names a missing dependency, and accepts one that is already available', () => {
    const { order, failed } = orderByDependencies(
      [
        { id: 'x', dependencies: ['ghost'] },
        { id: 'y', dependencies: ['loaded-before'] },
      ],
      new Set(['loaded-before']),
    );
    expect(order).toEqual(['y']);
    expect(failed.get('x')?.code).toBe('PLUGIN_DEPENDENCY_MISSING');
    expect(failed.get('x')?.details).toEqual({ plugin: 'x', dependency: 'ghost' });
  });
});

describe('CaptureServer', () => {
  it('records registerTool, registerResource and registerPrompt calls in order without registering anything', () => {
    const capture = new CaptureServer();
    capture.registerTool('t', { description: 'd', inputSchema: { a: z.string() } }, noop);
    capture.registerResource('fixed', 'mcp://fixed', { mimeType: 'text/plain' }, noop);
    capture.registerResource('tpl', new ResourceTemplate('mcp://x/{id}', { list: undefined }), {}, noop);
    capture.registerPrompt('p', { description: 'd' }, noop);
    expect(capture.registrations.map((r) => [r.kind, r.name])).toEqual([
      ['tool', 't'],
      ['resource', 'fixed'],
      ['resource', 'tpl'],
      ['prompt', 'p'],
    ]);
  });

  it('understands the deprecated tool/resource/prompt overloads', () => {
    const capture = new CaptureServer();
    const shape = { q: z.string() };
    capture.tool('bare', noop);
    capture.tool('described', 'a description', noop);
    capture.tool('shaped', 'with shape', shape, { readOnlyHint: true }, noop);
    capture.tool('annotated', { title: 'Annotated' }, noop);
    capture.resource('r', 'mcp://r', noop);
    capture.prompt('pr', 'prompt description', { topic: z.string() }, noop);
    const tools = capture.registrations.filter((r): r is CapturedTool => r.kind === 'tool');
    expect(tools.map((t) => t.config)).toEqual([
      {},
      { description: 'a description' },
      { description: 'with shape', inputSchema: shape, annotations: { readOnlyHint: true } },
      { annotations: { title: 'Annotated' } },
    ]);
    const prompt = capture.registrations.find((r) => r.kind === 'prompt');
    expect(prompt?.kind === 'prompt' && prompt.config.description).toBe('prompt description');
  });

  it('refuses duplicates and malformed calls the way McpServer does', () => {
    const capture = new CaptureServer();
    capture.registerTool('t', { description: 'd' }, noop);
    expect(() => capture.registerTool('t', { description: 'again' }, noop)).toThrow('already registered');
    capture.registerResource('a', 'mcp://same', {}, noop);
    expect(() => capture.registerResource('b', 'mcp://same', {}, noop)).toThrow('Resource mcp://same is already registered');
    expect(() => capture.registerTool('', {}, noop)).toThrow(TypeError);
    expect(() => capture.registerTool('x', {}, 'not a function' as never)).toThrow(TypeError);
    expect(() => capture.registerResource('y', 42 as never, {}, noop)).toThrow(TypeError);
  });

  it('tracks handles during preflight: remove drops the registration, disable is remembered, update waits for registration', () => {
    const capture = new CaptureServer();
    const removed = capture.registerTool('gone', { description: 'd' }, noop);
    const hidden = capture.registerTool('hidden', { description: 'd' }, noop);
    removed.remove();
    hidden.disable();
    expect(capture.registrations.map((r) => r.name)).toEqual(['hidden']);
    expect(hidden.enabled).toBe(false);
    expect(() => hidden.update({})).toThrow('only after the plugin has been registered');
    const calls: string[] = [];
    hidden.bind({ enable: () => calls.push('enable'), disable: () => calls.push('disable'), remove: () => calls.push('remove'), update: () => calls.push('update') });
    hidden.enable();
    hidden.update({});
    hidden.remove();
    expect(calls).toEqual(['enable', 'update', 'remove']);
  });

  it('refuses registrations once sealed', () => {
    const capture = new CaptureServer();
    capture.seal();
    expect(() => capture.registerTool('late', { description: 'd' }, noop)).toThrow('only while createPlugin(server) runs');
    expect(capture.isConnected()).toBe(false);
  });
});

describe('tool validation', () => {
  const tool = (name: string, config: CapturedTool['config']): CapturedTool => {
    const capture = new CaptureServer();
    capture.registerTool(name, config, noop);
    return capture.registrations[0] as CapturedTool;
  };

  it('classifies schema kinds', () => {
    expect(schemaKind(undefined)).toBe('absent');
    expect(schemaKind({})).toBe('zod-raw-shape');
    expect(schemaKind({ a: z.string() })).toBe('zod-raw-shape');
    expect(schemaKind(z.object({ a: z.string() }))).toBe('zod-object');
    expect(schemaKind(z.string())).toBe('unsupported');
    expect(schemaKind({ type: 'object', properties: {} })).toBe('json-schema');
    expect(schemaKind({ type: 'array' })).toBe('unsupported');
    expect(schemaKind('object')).toBe('unsupported');
  });

  it('accepts a well-formed tool and lists every problem of a bad one', () => {
    expect(toolProblems(tool('search.v2_tool-x', { description: 'ok', inputSchema: z.object({ q: z.string() }) }))).toEqual([]);
    expect(toolProblems(tool('ok', { description: 'ok', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } }))).toEqual([]);
    const problems = toolProblems(tool('has space', { description: '  ', inputSchema: z.string(), outputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } } }));
    expect(problems).toHaveLength(4);
    expect(problems[0]).toContain('must match');
    expect(problems[1]).toBe('description must be a non-empty string');
    expect(problems[2]).toContain('inputSchema must be');
    expect(problems[3]).toContain('outputSchema is a JSON Schema the host cannot use');
    expect(toolProblems(tool('x'.repeat(129), { description: 'd' }))[0]).toContain('must match');
  });
});

describe('esmLoaderOptionsFromEnv', () => {
  it('keeps the seed defaults when nothing is set', () => {
    expect(esmLoaderOptionsFromEnv({})._unsafeUnwrap()).toEqual(DEFAULT_ESM_LOADER_FLAGS);
    expect(DEFAULT_ESM_LOADER_FLAGS).toEqual({
      manifestLoaderEnabled: true,
      pluginInstallDir: './plugins',
      requireSignatures: false,
      strictCapabilities: false,
      strictTools: false,
      schemaPath: undefined,
      debugRegistry: false,
    });
  });

  it('reads every flag from its environment variable', () => {
    const flags = esmLoaderOptionsFromEnv({
      MANIFEST_LOADER_ENABLED: 'false',
      PLUGIN_INSTALL_DIR: '/srv/plugins',
      REQUIRE_SIGNATURES: '1',
      STRICT_CAPABILITIES: 'TRUE',
      STRICT_TOOLS: 'yes',
      SCHEMA_PATH: '/etc/mcp/schema.json',
      DEBUG_REGISTRY: 'on',
    })._unsafeUnwrap();
    expect(flags).toEqual({
      manifestLoaderEnabled: false,
      pluginInstallDir: '/srv/plugins',
      requireSignatures: true,
      strictCapabilities: true,
      strictTools: true,
      schemaPath: '/etc/mcp/schema.json',
      debugRegistry: true,
    });
    expect(esmLoaderOptionsFromEnv({ STRICT_TOOLS: '0', MANIFEST_LOADER_ENABLED: '' })._unsafeUnwrap()).toMatchObject({ strictTools: false, manifestLoaderEnabled: true });
  });

  it('refuses a value that is not a boolean, naming the variable', () => {
    const error = esmLoaderOptionsFromEnv({ STRICT_CAPABILITIES: 'ture' })._unsafeUnwrapErr();
    expect(error.code).toBe('HOST_INVALID_OPTIONS');
    expect(error.message).toContain('STRICT_CAPABILITIES');
  });
});

describe('runner arguments and reports', () => {
  it('round-trips runner settings through the command line', () => {
    const settings: EsmRunnerSettings = { root: '/p/--odd', strictCapabilities: true, strictTools: false, schemaPath: '/s.json', createTimeoutMs: 1234, watch: true, debugRegistry: true, reportFd: 4 };
    expect(parseRunnerArguments(runnerArguments(settings))._unsafeUnwrap()).toEqual(settings);
    expect(parseRunnerArguments(['--report-fd', '2', '/p'])._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(parseRunnerArguments(['--bogus', '/p'])._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(parseRunnerArguments([])._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
    expect(parseRunnerArguments(['--create-timeout-ms', '-1', '/p'])._unsafeUnwrapErr().code).toBe('HOST_INVALID_OPTIONS');
  });

  it('turns a crashed runner with a load-failed report into the load error', () => {
    const report = formatRunnerReport(loadFailedReport(hostError('PLUGIN_TOOL_INVALID', 'tool "x" is invalid', { details: { plugin: 'p' } })));
    const crashed = hostError('PLUGIN_CRASHED', 'plugin exited', { details: { stderr_tail: `noise\n${report}\n`, exit: { code: 78 } } });
    const mapped = esmRunnerFailure(crashed);
    expect(mapped.code).toBe('PLUGIN_TOOL_INVALID');
    expect(mapped.message).toBe('tool "x" is invalid');
    expect(mapped.details).toMatchObject({ plugin: 'p', exit: { code: 78 } });
  });

  it('believes a report of what the runner checks before plugin code runs only with a seal this host issued, and hands no seal on', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esm-seal-'));
    try {
      const issued = (await issueRunnerReportSeal(dir))._unsafeUnwrap();
      const bytes = Buffer.alloc(64);
      const seal = bytes.subarray(0, readSync(issued.fd, bytes, 0, 64, 0)).toString('utf8');
      issued.release();
      expect(seal).toMatch(/^[0-9a-f]{32}$/);
      // The seal's file has no name: the runner's inherited descriptor is the only way to it.
      expect(await readdir(dir)).toEqual([]);
      const untrusted = loadFailedReport(hostError('PLUGIN_EXECUTABLE_UNTRUSTED', 'entry bytes differ', { details: { reason: 'digest_mismatch' } }));
      const crashedWith = (line: string) => hostError('PLUGIN_CRASHED', 'exited', { details: { stderr_tail: `${line}\n`, exit: { code: 78 } } });

      const sealed = esmRunnerFailure(crashedWith(formatRunnerReport(untrusted, seal)));
      expect(sealed).toMatchObject({ code: 'PLUGIN_EXECUTABLE_UNTRUSTED', details: { reason: 'digest_mismatch' } });
      expect(String(sealed.details.stderr_tail)).not.toContain(seal);
      // Every caller waiting on the start gets the same crash: a seal is not spent by one of them.
      expect(esmRunnerFailure(crashedWith(formatRunnerReport(untrusted, seal))).code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');

      for (const line of [formatRunnerReport(untrusted), formatRunnerReport(untrusted, 'f'.repeat(32)), formatRunnerReport(untrusted, seal.toUpperCase())]) {
        expect(esmRunnerFailure(crashedWith(line))).toMatchObject({ code: 'PLUGIN_CRASHED', details: { exit: { code: 78 } } });
      }
      const io = loadFailedReport(hostError('HOST_IO_ERROR', 'read failed'));
      expect(esmRunnerFailure(crashedWith(formatRunnerReport(io))).code).toBe('PLUGIN_CRASHED');
      // A failure of the plugin's own code is believed unsealed: its code may as well cause it.
      const entry = loadFailedReport(hostError('PLUGIN_ENTRY_INVALID', 'no createPlugin'));
      expect(esmRunnerFailure(crashedWith(formatRunnerReport(entry))).code).toBe('PLUGIN_ENTRY_INVALID');
      // A seal in a tail that reports nothing believable is taken out too.
      const other = hostError('PLUGIN_CRASHED', 'exited', { details: { stderr_tail: `${formatRunnerReport(untrusted, seal)}\n`, exit: { code: 1 } } });
      expect(String(esmRunnerFailure(other).details.stderr_tail)).not.toContain(seal);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('leaves other errors alone and ignores reports with codes a runner never sends', () => {
    const timeout = hostError('PLUGIN_TIMEOUT', 'slow');
    expect(esmRunnerFailure(timeout)).toBe(timeout);
    const forged = '{"esmRunner":{"kind":"load-failed","code":"PLUGIN_QUARANTINED","message":"x","details":{}}}';
    expect(parseRunnerReport(forged)).toBeUndefined();
    const crashed = hostError('PLUGIN_CRASHED', 'exited', { details: { stderr_tail: forged } });
    expect(esmRunnerFailure(crashed)).toBe(crashed);
    expect(parseRunnerReport('{"esmRunner": not json')).toBeUndefined();
  });
});

describe('discoverEsmPlugins', () => {
  it('lists the install directory folders that hold mcp-plugin.json, sorted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'esm-install-'));
    try {
      for (const name of ['b@1.0.0', 'a@2.0.0', 'not-a-plugin']) await mkdir(join(dir, name));
      await writeFile(join(dir, 'b@1.0.0', 'mcp-plugin.json'), '{}');
      await writeFile(join(dir, 'a@2.0.0', 'mcp-plugin.json'), '{}');
      await writeFile(join(dir, 'stray.json'), '{}');
      expect((await discoverEsmPlugins(dir))._unsafeUnwrap()).toEqual([join(dir, 'a@2.0.0'), join(dir, 'b@1.0.0')]);
      expect((await discoverEsmPlugins(join(dir, 'missing')))._unsafeUnwrap()).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
