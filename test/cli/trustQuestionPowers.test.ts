/**
 * The CLI's install question names every power the install grants (review s33 R9 F1): a manifest's env_allow (the
 * values of those names in the environment of the process that starts the plugin) and client_requests (the
 * application's model, its user) were granted by a question that showed only network and writes.
 */
import { describe, expect, it } from 'vitest';
import { trustLines } from '../../src/cli/present.js';
import type { TrustRequest } from '../../src/installer/trust.js';

const request: TrustRequest = {
  plugin_id: 'envgrab',
  display_name: 'Env grab',
  version: '0.1.0',
  namespace_owner: 'io.example.hello',
  tos: null,
  risk: null,
  license: null,
  source: 'directory',
  source_path: '/tmp/envgrab',
  capabilities: { network: false, fs_write_dir: '', env_allow: ['DATABASE_URL', 'STRIPE_SECRET_KEY'], client_requests: ['sampling', 'elicitation'] },
  tools: [{ name: 'hello', risk_class: 'read' }],
};

describe('trustLines and the powers beside the sandbox', () => {
  it('names the host env names and client request kinds the plugin is granted', () => {
    const text = trustLines(request, 200).join('\n');
    expect(text).toMatch(/^ {2}host env +DATABASE_URL, STRIPE_SECRET_KEY \(the values your environment sets for them\)$/m);
    expect(text).toMatch(/^ {2}client requests +sampling, elicitation \(answered by the application that runs it\)$/m);
  });

  it('names the credentials the plugin needs, when it declares any (review R9 N5)', () => {
    expect(trustLines({ ...request, credentials: ['NOTES_TOKEN'] }, 200).join('\n')).toMatch(/^ {2}credentials +NOTES_TOKEN \(the values you give it with setup\)$/m);
    expect(trustLines(request, 200).join('\n')).not.toMatch(/credentials/);
  });

  it('says none when none is granted', () => {
    const text = trustLines({ ...request, capabilities: { network: false, fs_write_dir: '', env_allow: [] } }, 200).join('\n');
    expect(text).toMatch(/^ {2}host env +none$/m);
    expect(text).toMatch(/^ {2}client requests +none$/m);
  });
});

describe('trustLines and a package whose text would fill the screen', () => {
  const many = Array.from({ length: 1024 }, (_, i) => ({ name: `tool_${String(i).padStart(4, '0')}_${'x'.repeat(110)}`, risk_class: i === 7 ? ('destructive' as const) : ('read' as const) }));
  const long = { ...request, license: 'L'.repeat(200_000), tools: many };

  it('keeps the powers as the last rows, right above the question, whatever came before', () => {
    const lines = trustLines(long, 80);
    // A row starts at column 2 with its key; its continuations start at the value column.
    const keys = lines.filter((line) => /^ {2}\S/.test(line)).map((line) => line.trim().split(/ {2,}/)[0]);
    expect(keys.slice(-4)).toEqual(['network', 'writes', 'host env', 'client requests']);
    expect(lines.length - lines.findIndex((line) => line.startsWith('  network'))).toBeLessThanOrEqual(6);
  });

  it('cuts a long row to a few lines, saying how much was left out, and counts the tools by class', () => {
    const lines = trustLines(long, 80);
    expect(lines.length).toBeLessThanOrEqual(1 + 6 * 10);
    expect(lines.every((line) => [...line].length <= 80)).toBe(true);
    const text = lines.join('\n');
    expect(text).toMatch(/^ {2}tools +1024 \(1023 read, 0 write, 1 destructive\): tool_0000_x/m);
    const license = lines.findIndex((line) => line.startsWith('  license'));
    expect(lines[license + 5]).toMatch(/L … \d+ more characters not shown$/);
    expect(lines[license + 6]).toMatch(/^ {2}tools/);
    const shown = lines.slice(license, license + 6).join('').match(/L/g)?.length ?? 0;
    const left = Number(/… (\d+) more characters/.exec(lines[license + 5] ?? '')?.[1]);
    expect(shown + left).toBe(200_000);
  });
});
