/**
 * What an install deletes (an introspection start's data directory below the
 * staging directory, an install root a `.pth` line wrote into while pip ran)
 * was written by the package's code, which on a host that is not root runs
 * as the host's own user: it can take the access to a directory of its own
 * away (mode 000). Node's rm then failed with EACCES, the install with
 * HOST_IO_ERROR, and the tree, as large as its writer made it, stayed for
 * good, failing every later collection of leftovers (review R6 F3). The
 * removal runs here as an ordinary user (under setpriv when the test runs as
 * root, where rm would pass anyway).
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..');
const NOBODY = '65534';
const base = mkdtempSync(join(tmpdir(), 'locked-tree-'));
// The ordinary user must be able to make its tree here.
chmodSync(base, 0o777);
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** Builds a tree with locked directories as the ordinary user, removes it with removeTree, and reports. */
async function removeLocked(tree: string): Promise<unknown> {
  const script = `
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { removeTree } from ${JSON.stringify(join(REPO, 'src/installer/removeTree.ts'))};
const root = ${JSON.stringify(tree)};
mkdirSync(root + '/home/locked/deeper', { recursive: true });
writeFileSync(root + '/home/locked/deeper/bulk', 'x'.repeat(4096));
// A link to a directory outside the tree: removing the tree must neither follow it nor change what it names.
mkdirSync(root + '-outside');
chmodSync(root + '-outside', 0o500);
symlinkSync(root + '-outside', root + '/home/link');
chmodSync(root + '/home/locked/deeper', 0o000);
chmodSync(root + '/home/locked', 0o000);
let error;
try { await removeTree(root); } catch (cause) { error = cause.code; }
const { statSync } = await import('node:fs');
console.log(JSON.stringify({ error, removed: !existsSync(root), outsideMode: (statSync(root + '-outside').mode & 0o777).toString(8) }));
`;
  const asUser = process.getuid?.() === 0 ? ['setpriv', '--reuid', NOBODY, '--regid', NOBODY, '--clear-groups', '--'] : [];
  const argv = [...asUser, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script];
  const { stdout } = await promisify(execFile)(argv[0]!, argv.slice(1), { cwd: REPO, timeout: 60_000 });
  return JSON.parse(stdout);
}

describe('removeTree on a tree its writer locked', { timeout: 120_000 }, () => {
  it('gives its own directories their access back and removes it all, following no link', async () => {
    expect(await removeLocked(join(base, 'stage'))).toEqual({ removed: true, outsideMode: '500' });
  });
});
