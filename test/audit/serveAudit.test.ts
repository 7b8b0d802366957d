/**
 * `mcp-plugin-host serve` with an `audit` section in its configuration file,
 * as a real subprocess (the CLI from source through tsx) with the SDK's own
 * Client over stdio: each call leaves a record in the JSONL file, created
 * 0600 next to the configuration, naming the stdio client as the caller,
 * with arguments redacted as configured.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, afterEach, expect, it } from 'vitest';
import type { AuditCallRecord } from '../../src/audit/auditRecord.js';
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { waitUntil } from '../support/eventually.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 180_000;
const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => removePackages());

function cliEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

it(
  'appends a record per call to the audit file its configuration names, with the stdio client as the caller',
  async () => {
    const dir = await pool.profile();
    const installer = await pool.installed(dir, ['probe']);
    await installer.close();
    const config = join(dir, 'gateway.json');
    await writeFile(config, JSON.stringify({ profileDir: '.', dev: true, audit: { file: 'audit.jsonl', arguments: true, secretFields: ['pin'] } }));

    const client = new Client({ name: 'serve-audit-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', CLI_SOURCE, 'serve', '--config', config], cwd: REPO, env: cliEnv(), stderr: 'pipe' }));
    try {
      await client.callTool({ name: 'plug.host-probe.echo', arguments: { message: 'audited', pin: '1234' } });
      await client.callTool({ name: 'plug.host-probe.wipe', arguments: {} });
    } finally {
      await client.close();
    }

    const file = join(dir, 'audit.jsonl');
    // The gateway writes its last batch and syncs when stdin ends, after the client has gone.
    await waitUntil(async () => (await readFile(file, 'utf8').catch(() => '')).trimEnd().split('\n').length === 2, 30_000);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const [echo, wipe] = (await readFile(file, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditCallRecord);
    expect(echo).toMatchObject({
      kind: 'call',
      caller: { id: 'stdio', transport: 'stdio' },
      op_id: 'plug.host-probe.echo',
      plugin_id: 'host-probe',
      outcome: 'ok',
      arguments: { message: 'audited', pin: '[redacted]' },
    });
    expect(wipe).toMatchObject({ caller: { id: 'stdio', transport: 'stdio' }, op_id: 'plug.host-probe.wipe', outcome: 'PLUGIN_RISK_NOT_ALLOWED' });
  },
  TIMEOUT_MS,
);

it(
  "rotates the audit file at the configuration's maxFileBytes, keeping its keepFiles rotated files",
  async () => {
    const dir = await pool.profile();
    const installer = await pool.installed(dir, ['probe']);
    await installer.close();
    const file = join(dir, 'audit.jsonl');
    // A live file a few bytes short of the bound, and an older rotated one that keepFiles 1 leaves no room for.
    const line = `${JSON.stringify({ kind: 'gap', at: new Date(0).toISOString(), dropped: 1 })}\n`;
    const full = line.repeat(Math.floor((16_385 - 10) / line.length));
    await writeFile(file, full, { mode: 0o600 });
    await writeFile(`${file}.1`, line, { mode: 0o600 });
    const config = join(dir, 'gateway.json');
    await writeFile(config, JSON.stringify({ profileDir: '.', dev: true, audit: { file: 'audit.jsonl', maxFileBytes: 16_385, keepFiles: 1 } }));

    const client = new Client({ name: 'serve-audit-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', CLI_SOURCE, 'serve', '--config', config], cwd: REPO, env: cliEnv(), stderr: 'pipe' }));
    try {
      await client.callTool({ name: 'plug.host-probe.echo', arguments: { message: 'rotated' } });
    } finally {
      await client.close();
    }

    await waitUntil(async () => (await readFile(file, 'utf8').catch(() => '')).includes('plug.host-probe.echo'), 30_000);
    expect(await readFile(`${file}.1`, 'utf8')).toBe(full);
    const [record, ...more] = (await readFile(file, 'utf8')).trimEnd().split('\n');
    expect(more).toEqual([]);
    expect(JSON.parse(record ?? '')).toMatchObject({ kind: 'call', op_id: 'plug.host-probe.echo', outcome: 'ok' });
    await expect(stat(`${file}.2`)).rejects.toThrow(/ENOENT/);
  },
  TIMEOUT_MS,
);
