import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('docs/adversarial.md', () => {
  it('cites only test files that exist, and at least one for every attack row', () => {
    const text = readFileSync(`${root}docs/adversarial.md`, 'utf8');
    const rows = text.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| attack') && !l.startsWith('|---'));
    expect(rows.length).toBeGreaterThanOrEqual(15);
    for (const row of rows) {
      const cited = [...row.matchAll(/`(test\/[^`]+)`/g)].map((m) => m[1]!);
      expect(cited.length, row).toBeGreaterThan(0);
      for (const path of cited) expect(existsSync(`${root}${path}`), path).toBe(true);
    }
  });
});
