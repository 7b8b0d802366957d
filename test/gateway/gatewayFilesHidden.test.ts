/**
 * The gateway's own files kept from its plugins (review R11 F3): every token
 * file and the audit file the configuration names are hidden from plugins
 * beside the default secret locations. On a host that is not root a plugin
 * runs as the host's user and reads what that user reads in the trees the
 * sandbox mounts (`/etc`); here the token file is readable by anyone, so that
 * on a root host too only the mask keeps it from the plugin.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import auditDefaults from '../../etc/audit-defaults.json' with { type: 'json' };
import { checkGatewayConfig, resolveGatewayConfig } from '../../src/gateway/gatewayConfig.js';
import { DEFAULT_SECRET_PATHS } from '../../src/sandbox/secretLocations.js';
import { HostPool, jsonOf } from '../support/hostHarness.js';

const SLOW = 120_000;
const TOKEN = 'gateway-token-kept-from-plugins-0123456789abcdef';
const pool = new HostPool();
afterEach(() => pool.cleanup());

describe('the files a gateway configuration names', () => {
  it('are hidden from plugins beside the default secret locations, as absolute paths', async () => {
    const config = checkGatewayConfig({ http: { token: { file: 'relative/token' }, clients: [{ name: 'ci', token: { file: '/srv/gw/ci-token' } }, { name: 'app', token: { env: 'APP_TOKEN' } }] }, audit: { file: '/var/log/gw/audit.jsonl' } })._unsafeUnwrap();
    // Read without the HTTP transport: no token is read, and the files are hidden all the same.
    const resolved = (await resolveGatewayConfig(config, {}))._unsafeUnwrap();
    // The audit file's rotated copies (JsonlAuditSink's keepFiles) hold the same records.
    const rotated = Array.from({ length: auditDefaults.keepFiles }, (_, n) => `/var/log/gw/audit.jsonl.${n + 1}`);
    expect(resolved.host.sandbox?.secretPaths).toEqual([...DEFAULT_SECRET_PATHS, join(process.cwd(), 'relative/token'), '/srv/gw/ci-token', '/var/log/gw/audit.jsonl', ...rotated]);
  });
});

describe.runIf(process.getuid?.() === 0)('a token file in a tree the sandbox mounts', () => {
  let dir: string;
  let tokenFile: string;
  beforeAll(async () => {
    dir = await mkdtemp('/etc/mcp-plugin-host-gateway-');
    await chmod(dir, 0o755);
    tokenFile = join(dir, 'token');
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o644 });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const readByPlugin = async (options: Parameters<HostPool['installed']>[2]): Promise<Record<string, unknown>> => {
    const host = await pool.installed(await pool.profile(), ['probe'], options);
    const read = await host.call('plug.host-probe.read_path', { path: tokenFile });
    if (read.isErr()) expect.fail(`${read.error.code}: ${read.error.message}`);
    return jsonOf<{ data: Record<string, unknown> }>(read.value).data;
  };

  it(
    'is readable by a plugin of a host opened without the gateway configuration',
    async () => {
      expect(await readByPlugin({})).toEqual({ content: `${TOKEN}\n` });
    },
    SLOW,
  );

  it(
    'is not readable by a plugin of the host the configuration opens',
    async () => {
      const config = checkGatewayConfig({ transport: 'http', http: { token: { file: tokenFile } } })._unsafeUnwrap();
      const resolved = (await resolveGatewayConfig(config, {}))._unsafeUnwrap();
      const seen = await readByPlugin({ ...(resolved.host.sandbox === undefined ? {} : { sandbox: resolved.host.sandbox }) });
      expect(JSON.stringify(seen)).not.toContain(TOKEN);
    },
    SLOW,
  );
});
