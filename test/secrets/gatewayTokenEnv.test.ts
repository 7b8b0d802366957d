/**
 * The variable `serve --token-env NAME` reads the gateway's bearer token
 * from is not passed to plugins, even one whose grant names it: `serve` as a
 * real subprocess over HTTP, the SDK client calling the probe plugin's
 * `env` tool (its grant allows PROBE_GREETING).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GatewayPool } from '../support/gatewayHarness.js';
import { HostPool, removePackages } from '../support/hostHarness.js';
import { ServeProcesses } from '../support/serveProcess.js';

const TIMEOUT_MS = 180_000;
const TOKEN = 'gateway-token-9a8b7c6d5e4f3a2b';

const pool = new HostPool();
const clients = new GatewayPool();
const serves = new ServeProcesses();
afterEach(async () => {
  await clients.cleanup();
  await serves.cleanup();
  await pool.cleanup();
});
afterAll(() => removePackages());

describe('the gateway token variable', () => {
  it(
    'is left out of the environment of a plugin granted its name',
    async () => {
      const dir = await pool.profile();
      await (await pool.installed(dir, ['probe'])).close();
      const served = await serves.start(['--profile-dir', dir, '--dev', '--http', '--port', '0', '--token-env', 'PROBE_GREETING'], { env: { PROBE_GREETING: TOKEN } });
      const { url } = served;
      expect(url, served.stderr()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const { client } = await clients.connectHttp(url, TOKEN, 'token-env-test');
      const reported = (await client.callTool({ name: 'plug.host-probe.env', arguments: {} })) as CallToolResult;
      const text = JSON.stringify(reported.content);
      expect(text).toContain('HOME');
      expect(text).not.toContain(TOKEN);
    },
    TIMEOUT_MS,
  );
});
