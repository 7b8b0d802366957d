/**
 * A published npm server as its users get it (issue 14): the MCP reference
 * server-everything laid out by `npm install` (about 3,900 files, 32 MB on
 * disk) and packed into a `.mcpb` with the official MCPB CLI, which keeps
 * 2,588 of them (15 MB).
 *
 * - install: `PluginHost.install` of the bundle (hash, stage, extract with
 *   the archive checks, validate, pin every file, catalog transaction)
 *   against `unzip` of the same bundle into an empty directory;
 * - cold first call: a freshly opened PluginHost calling `echo` (tree check,
 *   sandbox, spawn, initialize, tools/list check, call) against a bare SDK
 *   `Client` spawning the same server from the same npm layout, unsandboxed;
 * - design note: the server's start under the integrity policy that pins a
 *   Node main module, against the same start without it.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { integrityPolicy, integrityPolicyOptions } from '../src/binding/nodeMain.js';
import { PluginHost } from '../src/index.js';
import { bundleDirectory, installedVersion, npmLayout, packBundle } from '../test/support/mcpbBundles.js';
import { result, timeMs, type BenchResult } from './harness.js';

const execFileAsync = promisify(execFile);
const SERVER = '@modelcontextprotocol/server-everything';
const ENTRY = `node_modules/${SERVER}/dist/index.js`;
const INSTALLS = 7;
const COLD_STARTS = 8;
const POLICY_STARTS = 12;

async function openHost(profileDir: string): Promise<PluginHost> {
  const opened = await PluginHost.open({ profileDir, profileKind: 'dev' });
  if (opened.isErr()) throw opened.error;
  return opened.value;
}

/** The bundle of the server as an author packs it: its npm layout, a manifest, `mcpb pack`. */
async function everythingBundle(): Promise<{ bundle: string; layout: string; remove: () => Promise<void> }> {
  const version = await installedVersion(SERVER);
  const layout = await npmLayout(SERVER, version);
  const fixture = JSON.parse(await readFile(new URL('../fixtures/plugins/host-everything/manifest.json', import.meta.url), 'utf8')) as { advertised_tools: { name: string }[] };
  const dir = await bundleDirectory(
    {
      manifest_version: '0.3',
      name: 'everything',
      version,
      description: 'The MCP reference server-everything, as published',
      author: { name: 'Model Context Protocol' },
      server: { type: 'node', entry_point: ENTRY, mcp_config: { command: 'node', args: [`\${__dirname}/${ENTRY}`, 'stdio'] } },
      tools: fixture.advertised_tools.map(({ name }) => ({ name })),
    },
    layout,
  );
  const bundle = await packBundle(dir);
  return {
    bundle,
    layout,
    remove: async () => {
      await rm(dir, { recursive: true, force: true });
      await rm(join(bundle, '..'), { recursive: true, force: true });
    },
  };
}

async function install(bundle: string): Promise<BenchResult> {
  const ours: number[] = [];
  const unzip: number[] = [];
  const installSide = async (): Promise<void> => {
    const profileDir = await mkdtemp(join(tmpdir(), 'bench-published-'));
    const host = await openHost(profileDir);
    ours.push(
      await timeMs(async () => {
        (await host.install(bundle, { canary: false }))._unsafeUnwrap();
      }),
    );
    await host.close();
    await rm(profileDir, { recursive: true, force: true });
  };
  const unzipSide = async (): Promise<void> => {
    const into = await mkdtemp(join(tmpdir(), 'bench-unzip-'));
    unzip.push(await timeMs(() => execFileAsync('unzip', ['-q', bundle, '-d', into])));
    await rm(into, { recursive: true, force: true });
  };
  // One warm-up of each (page cache, the schema compilers), then alternating order.
  await installSide();
  await unzipSide();
  ours.length = 0;
  unzip.length = 0;
  for (let i = 0; i < INSTALLS; i++) for (const side of i % 2 === 0 ? [installSide, unzipSide] : [unzipSide, installSide]) await side();
  return result(
    {
      name: 'install a .mcpb of a published npm server (server-everything: 2,588 files, 15 MB, as mcpb pack keeps its npm layout)',
      baselineName: 'unzip -q of the same bundle',
      unit: 'ms',
      compare: 'ratio',
      target: 1.5,
      better: 'lower',
      note: `${INSTALLS} runs of each after one warm-up, alternating order; each install into a fresh profile through an open PluginHost (canary off), which hashes the bundle, stages and extracts it with the archive checks (members up to 1 MiB read, inflated and written with synchronous calls, each file hashed as it is written), validates the manifest, pins every file (a file unchanged since it was written keeps that digest) and commits the catalog; neither side fsyncs the extracted files (unzip fsyncs nothing, the host its file list, schemas and catalog only: see docs/install-safety.md, durability)`,
    },
    ours,
    unzip,
  );
}

async function coldCall(bundle: string, layout: string): Promise<BenchResult> {
  const profileDir = await mkdtemp(join(tmpdir(), 'bench-published-'));
  try {
    const installer = await openHost(profileDir);
    (await installer.install(bundle, { canary: false }))._unsafeUnwrap();
    await installer.close();
    const ours: number[] = [];
    const bare: number[] = [];
    const hostSide = async (): Promise<void> => {
      const host = await openHost(profileDir);
      ours.push(
        await timeMs(async () => {
          (await host.call('plug.everything.echo', { message: 'cold' }, { maxRisk: 'destructive' }))._unsafeUnwrap();
        }),
      );
      await host.close();
    };
    const bareSide = async (): Promise<void> => {
      let client: Client | undefined;
      bare.push(
        await timeMs(async () => {
          client = new Client({ name: 'bench-baseline', version: '0.0.0' }, { capabilities: {} });
          await client.connect(new StdioClientTransport({ command: process.execPath, args: [join(layout, ENTRY), 'stdio'], stderr: 'pipe' }));
          await client.callTool({ name: 'echo', arguments: { message: 'cold' } });
        }),
      );
      await client?.close();
    };
    await hostSide();
    await bareSide();
    ours.length = 0;
    bare.length = 0;
    for (let i = 0; i < COLD_STARTS; i++) for (const side of i % 2 === 0 ? [hostSide, bareSide] : [bareSide, hostSide]) await side();
    return result(
      {
        name: 'cold first call of a published npm server from its .mcpb (tree check + sandbox + spawn + initialize + tools/list + call)',
        baselineName: 'bare SDK Client spawning the same server from its npm layout + initialize + call',
        unit: 'ms',
        compare: 'difference',
        target: 25,
        better: 'lower',
        note: `${COLD_STARTS} cold starts each after one warm-up, alternating order; each of ours in a freshly opened PluginHost (the process already holds the parsed file list and its sweep workers, as a host that started the plugin before does; the warm-up recorded the verified tool list in the profile, so these starts send the call right after initialize and check tools/list beside it)`,
      },
      ours,
      bare,
    );
  } finally {
    await rm(profileDir, { recursive: true, force: true });
  }
}

/** Milliseconds from spawning `argv` until its first stdout bytes, the answer to an `initialize` written at once. */
function untilInitialized(argv: readonly string[]): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
    child.once('error', reject);
    child.stdout.once('data', () => {
      resolve(Number(process.hrtime.bigint() - started) / 1e6);
      child.kill('SIGKILL');
    });
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0.0.0' } } };
    child.stdin.end(`${JSON.stringify(initialize)}\n`);
  });
}

/**
 * What the integrity policy that pins a Node main module (Node 20 and 21)
 * costs the start of this server: the largest part of the cold call that a
 * bare start does not pay (docs/performance.md, "One cold call").
 */
async function policyStart(layout: string): Promise<BenchResult> {
  const entry = join(layout, ENTRY);
  const dir = await mkdtemp(join(tmpdir(), 'bench-policy-'));
  try {
    const policy = join(dir, 'policy.json');
    const digest = createHash('sha256').update(await readFile(entry)).digest('hex');
    await writeFile(policy, integrityPolicy(entry, digest));
    const underPolicy = [process.execPath, ...integrityPolicyOptions(policy), entry, 'stdio'];
    const bare = [process.execPath, entry, 'stdio'];
    const ours: number[] = [];
    const baseline: number[] = [];
    await untilInitialized(underPolicy);
    await untilInitialized(bare);
    for (let i = 0; i < POLICY_STARTS; i++) {
      if (i % 2 === 0) {
        ours.push(await untilInitialized(underPolicy));
        baseline.push(await untilInitialized(bare));
      } else {
        baseline.push(await untilInitialized(bare));
        ours.push(await untilInitialized(underPolicy));
      }
    }
    return result(
      {
        name: 'start of the published server until its initialize answer, under the main-module integrity policy (Node 20/21)',
        baselineName: 'the same start without the policy',
        unit: 'ms',
        compare: 'difference',
        target: 25,
        better: 'lower',
        role: 'design',
        note: `${POLICY_STARTS} alternating starts after one warm-up of each, unsandboxed; the policy is the host's own (integrityPolicy, integrityPolicyOptions), which checks the main module's bytes and makes Node consult the policy for every module it loads; hosts without bubblewrap (unsandboxed, Seatbelt) pay it, while under bubblewrap the verified main module is mounted instead and the cold call row does not. The target shown is the issue's budget for the whole cold call`,
      },
      ours,
      baseline,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs the published-server benchmarks. */
export async function run(): Promise<BenchResult[]> {
  const { bundle, layout, remove } = await everythingBundle();
  try {
    return [await install(bundle), await coldCall(bundle, layout), await policyStart(layout)];
  } finally {
    await remove();
  }
}
