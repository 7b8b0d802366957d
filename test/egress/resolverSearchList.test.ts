/**
 * The proxy's own resolver looks up exactly the name it checked. glibc's
 * getaddrinfo tries a name that does not resolve again with each `search`
 * domain of /etc/resolv.conf appended, so `anything.allowed.test`, allowed by
 * `*.allowed.test`, reached the host of `anything.allowed.test.corp.test`, a
 * name the list never allowed (review R11 F1). Run as root: the fixture host
 * gets a mount and network namespace of its own (`unshare`), with its own
 * resolv.conf, DNS server and origin, so nothing of the machine's is changed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'egress', 'search-domain-host.ts');
const scratch = mkdtempSync(join(tmpdir(), 'egress-search-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Outcome {
  readonly statuses: Record<string, string>;
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
    const outcome = await run(['real.allowed.test', 'anything.allowed.test']);
    // The control: the fixture's DNS server and origin work, and a listed name it knows is served.
    expect(outcome.statuses['real.allowed.test']).toBe('HTTP/1.1 200 OK');
    expect(outcome.served).toEqual(['real.allowed.test/']);
    // The name DNS does not know is not resolved under corp.test: no origin request, a resolution failure.
    expect(outcome.statuses['anything.allowed.test']).toBe('HTTP/1.1 502 Bad Gateway');
    expect(outcome.events.find((e) => e.host === 'anything.allowed.test')).toMatchObject({ allowed: false, reason: 'resolution_failed' });
    expect(outcome.asked).not.toContain('anything.allowed.test.corp.test');
  });
});
