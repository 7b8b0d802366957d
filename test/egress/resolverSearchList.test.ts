/**
 * The proxy's own resolver, on a real DNS server. It looks up exactly the
 * name it checked: glibc's getaddrinfo tries a name that does not resolve
 * again with each `search` domain of /etc/resolv.conf appended, so
 * `anything.allowed.test`, allowed by `*.allowed.test`, reached the host of
 * `anything.allowed.test.corp.test`, a name the list never allowed (review
 * R11 F1). And one plugin's look-ups that its own zone's server never answers
 * do not hold up another's: getaddrinfo ran on the two thread-pool threads
 * Node gives look-ups, so 16 of them delayed every other plugin's next
 * request by 80 s (review R11 F7). Run as root: the fixture host gets a mount
 * and network namespace of its own (`unshare`), with its own resolv.conf, DNS
 * server and origin, so nothing of the machine's is changed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'egress', 'resolver-host.ts');
const scratch = mkdtempSync(join(tmpdir(), 'egress-search-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Outcome {
  readonly statuses: Record<string, string>;
  readonly order: readonly string[];
  readonly events: readonly { readonly host: string; readonly allowed: boolean; readonly reason?: string; readonly address?: string }[];
  readonly served: readonly string[];
  readonly asked: readonly string[];
}

async function run(names: readonly string[]): Promise<Outcome> {
  const { stdout } = await promisify(execFile)('unshare', ['--mount', '--net', '--', process.execPath, '--import', 'tsx', FIXTURE, scratch, ...names], {
    cwd: join(import.meta.dirname, '..', '..'),
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  return JSON.parse(stdout) as Outcome;
}

describe('egress proxy system resolver', { timeout: 90_000 }, () => {
  it.runIf(process.getuid?.() === 0)('never dials the answer for the name with a search domain appended, and still serves a listed name DNS knows', async () => {
    const outcome = await run(['allowed:real.allowed.test', 'allowed:anything.allowed.test']);
    // The control: the fixture's DNS server and origin work, and a listed name it knows is served.
    expect(outcome.statuses['allowed:real.allowed.test']).toBe('HTTP/1.1 200 OK');
    expect(outcome.served).toEqual(['real.allowed.test/']);
    // The name DNS does not know is not resolved under corp.test: no origin request, a resolution failure.
    expect(outcome.statuses['allowed:anything.allowed.test']).toBe('HTTP/1.1 502 Bad Gateway');
    expect(outcome.events.find((e) => e.host === 'anything.allowed.test')).toMatchObject({ allowed: false, reason: 'resolution_failed' });
    expect(outcome.asked).not.toContain('anything.allowed.test.corp.test');
  });

  it.runIf(process.getuid?.() === 0)("serves another plugin's listed name while one plugin's 16 look-ups wait on a server that never answers", async () => {
    const silent = Array.from({ length: 16 }, (_, i) => `silent:a${i}.silent.test`);
    const outcome = await run([...silent, 'wait', 'allowed:real.allowed.test']);
    expect(outcome.statuses['allowed:real.allowed.test']).toBe('HTTP/1.1 200 OK');
    // Every look-up of the silent plugin was asked of DNS at once, and none had been given up on when the other plugin was served.
    for (let i = 0; i < 16; i++) expect(outcome.asked).toContain(`a${i}.silent.test`);
    expect(outcome.order[0]).toBe('allowed:real.allowed.test');
    expect(silent.map((request) => outcome.statuses[request])).toEqual(silent.map(() => 'pending'));
  });
});
