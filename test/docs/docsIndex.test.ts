import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DOCS = fileURLToPath(new URL('../../docs', import.meta.url));

describe('docs/README.md', () => {
  const index = readFileSync(join(DOCS, 'README.md'), 'utf8');
  const entries = index.split('\n').filter((l) => l.startsWith('- ['));

  it('links every page of the docs folder on a line of its own', () => {
    const pages = readdirSync(DOCS).filter((f) => f.endsWith('.md') && f !== 'README.md');
    expect(pages.length).toBeGreaterThan(0);
    for (const page of pages) {
      expect(entries.filter((l) => l.startsWith(`- [${page}](${page}):`)), page).toHaveLength(1);
    }
  });

  it('says what each linked page is about', () => {
    for (const entry of entries) expect(entry).toMatch(/^- \[[\w.-]+\.md\]\([\w.-]+\.md\): \S.{20,}$/);
  });
});
