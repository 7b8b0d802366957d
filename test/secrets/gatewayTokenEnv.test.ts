/**
 * The variable `serve --token-env NAME` reads the gateway's bearer token
 * from is not passed to plugins, even one whose grant names it: `serve` as a
 * real subprocess over HTTP, the SDK client calling the probe plugin's
 * `env` tool (its grant allows PROBE_GREETING).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CLI_SOURCE, REPO } from '../cli/cliHarness.js';
import { waitUntil } from '../support/eventually.js';
import { GatewayPool } from '../support/gatewayHarness.js';
import { HostPool, removePackages } from '../support/hostHarness.js';

const TIMEOUT_MS = 180_000;
const TOKEN = 'gateway-token-9a8b7c6d5e4f3a2b';

const pool = new HostPool();
const clients = new GatewayPool();
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  await clients.cleanup();
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }
  await pool.cleanup();
});
afterAll(() => removePackages());

describe('the gateway token variable', () => {
  it(
    'is left out of the environment of a plugin granted its name',
    async () => {
      const dir = await pool.profile();
      await (await pool.installed(dir, ['probe'])).close();
      const env = { ...process.env, PROBE_GREETING: TOKEN };
      const args = ['--import', 'tsx', CLI_SOURCE, 'serve', '--profile-dir', dir, '--dev', '--http', '--port', '0', '--token-env', 'PROBE_GREETING'];
      const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['pipe', 'pipe', 'pipe'] });
      children.push(child);
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      await waitUntil(() => /listening on \S+\n/.test(stderr) || child.exitCode !== null, 60_000);
      const url = /listening on (\S+)/.exec(stderr)?.[1] ?? '';
      expect(url, stderr).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const { client } = await clients.connectHttp(url, TOKEN, 'token-env-test');
      const reported = (await client.callTool({ name: 'plug.host-probe.env', arguments: {} })) as CallToolResult;
      const text = JSON.stringify(reported.content);
      expect(text).toContain('HOME');
      expect(text).not.toContain(TOKEN);
    },
    TIMEOUT_MS,
  );
});
