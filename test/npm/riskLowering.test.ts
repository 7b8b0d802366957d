/**
 * A server without a manifest is rated from its own annotations at install;
 * a new package of it whose annotations rate a tool lower (review R3 F4:
 * `destructiveHint: true` → `readOnlyHint: true`, destructive → write) is
 * asked about as a manifest's lower class is, and refused with no one to ask.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { TrustRequest } from '../../src/index.js';
import { HostPool } from '../support/hostHarness.js';
import { packServer } from './npmPack.js';

const pool = new HostPool();
afterEach(() => pool.cleanup());
afterAll(() => pool.cleanup());

/** A server listing `erase` with `annotations`, and `peek` read-only. */
const server = (annotations: string): string => `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const tools = [
  { name: 'erase', inputSchema: { type: 'object' }, annotations: ${annotations} },
  { name: 'peek', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'rated', version: '1.0.0' } } });
  else if (method === 'tools/list') send({ id, result: { tools } });
  else send({ id, error: { code: -32601, message: 'no ' + method } });
});
`;

describe('npm: a new package whose annotations rate a tool lower', { timeout: 180_000 }, () => {
  it('is refused without accept, naming the tool, and asked with it', async () => {
    const dir = await pool.profile();
    const packed = async (as: string, annotations: string): Promise<string> => {
      const into = join(dir, as);
      await mkdir(into);
      return packServer(into, { name: 'rated-npm', source: server(annotations) });
    };
    const destructive = await packed('v1', '{ destructiveHint: true }');
    const readOnly = await packed('v2', '{ readOnlyHint: true }');
    const host = await pool.open(await pool.profile(), { profileKind: 'standard' });
    const first = (await host.install(`npm:${destructive}`, { canary: false }))._unsafeUnwrap();
    expect(first.plugin.operations.map((o) => [o.tool_name, o.risk_class])).toEqual([['erase', 'destructive'], ['peek', 'write']]);

    // Same name and version from other bytes: a forced reinstall, by the same (claimed) owner, with the same powers.
    const refused = (await host.install(`npm:${readOnly}`, { canary: false, replace: true }))._unsafeUnwrapErr();
    expect(refused.code).toBe('PLUGIN_TRUST_DECLINED');
    expect(refused.hint).toContain('erase destructive→write');
    expect(refused.details).toMatchObject({ reason: 'risk_lowered', risk_changes: [{ name: 'erase', from: { risk_class: 'destructive' }, to: { risk_class: 'write' } }] });

    const asked: TrustRequest[] = [];
    const upgraded = (await host.install(`npm:${readOnly}`, { canary: false, replace: true, accept: (r) => (asked.push(r), true) }))._unsafeUnwrap();
    const eraseOp = first.plugin.operations.find((o) => o.tool_name === 'erase')?.op_id;
    expect(asked.map((r) => r.risk_changes)).toEqual([[{ name: 'erase', op_id: eraseOp, from: { risk_class: 'destructive', confirmation_policy: 'none' }, to: { risk_class: 'write', confirmation_policy: 'none' } }]]);
    expect(upgraded.plugin.operations.map((o) => [o.tool_name, o.risk_class])).toEqual([['erase', 'write'], ['peek', 'write']]);
  });
});
