/**
 * The token file judged is the token file read (attack review R1). The way to
 * a token file was judged by name, then the name was opened again: in a
 * sticky directory another user may write (here one shared with a group,
 * mode 1770), that user's own regular file passed the walk (only the fstat
 * after the open was to refuse it), and when it was renamed to a link of
 * theirs before the open, the open followed the link to a file this user or
 * root owns and that user can read (as /etc/machine-id), whose first line
 * became the client's token. Real files, real renames, and a real process of
 * another user (uid 65534, through setpriv).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, lchown, link, mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tokenFromFile } from '../../src/gateway/tokenFile.js';

// What the other user does at the moment the gateway opens the file; the real open runs right after it. Only the moment
// is chosen here: the swap is a real rename.
const atOpen = vi.hoisted(() => ({ hook: undefined as (() => Promise<void>) | undefined }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    open: async (...args: Parameters<typeof actual.open>) => {
      const hook = atOpen.hook;
      atOpen.hook = undefined;
      await hook?.();
      return actual.open(...args);
    },
  };
});

const KNOWN = 'a-first-line-the-other-user-can-read-0123';
const NOBODY = 65534;
const READS = 3000;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  atOpen.hook = undefined;
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A directory the other user can reach, a sticky one in it shared with that user's group, and a file root owns that the other user can read. */
async function layout(): Promise<{ shared: string; readable: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'token-race-'));
  dirs.push(dir);
  await chmod(dir, 0o755);
  // Sticky and writable by a group the other user is in: the walk takes such a directory, as it takes /tmp.
  const shared = join(dir, 'shared');
  await mkdir(shared);
  await chown(shared, 0, NOBODY);
  await chmod(shared, 0o1770);
  const readable = join(dir, 'readable');
  await writeFile(readable, `${KNOWN}\n`, { mode: 0o644 });
  return { shared, readable };
}

// Renames its own regular file and its own link over `token`, in turn, until killed.
const FLIPPER = `
const { linkSync, renameSync, symlinkSync, writeFileSync } = require('node:fs');
const [dir, target] = process.argv.slice(1);
writeFileSync(dir + '/kept', 'theirs-0123456789abcdef\\n');
process.stdout.write('ready\\n');
// One system call in each state: the file's next name is linked while the name is the link, the next link made while
// it is the file.
for (;;) {
  linkSync(dir + '/kept', dir + '/f');
  renameSync(dir + '/f', dir + '/token');
  symlinkSync(target, dir + '/l');
  renameSync(dir + '/l', dir + '/token');
}
`;

describe.runIf(process.geteuid?.() === 0)('a token file swapped by another user while it is read', () => {
  it("refuses the other user's file before opening anything, so a link of theirs renamed over it at the open is never followed", async () => {
    const { shared, readable } = await layout();
    const token = join(shared, 'token');
    await writeFile(token, 'theirs-0123456789abcdef\n');
    await chown(token, NOBODY, NOBODY);
    const link = join(shared, 'link');
    await symlink(readable, link);
    await lchown(link, NOBODY, NOBODY);
    let swapped = false;
    atOpen.hook = async () => {
      await rename(link, token);
      swapped = true;
    };
    const read = await tokenFromFile(token, []);
    expect(read.isOk() ? `token ${read.value}` : read.error).toMatch(/^is owned by uid 65534, neither this process's user \(0\) nor root/);
    expect(swapped).toBe(false);
  });

  it('never gives the first line of the file a link of theirs points at while their process flips the name between a file and a link', async () => {
    const { shared, readable } = await layout();
    const flipper = spawn('setpriv', ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', process.execPath, '-e', FLIPPER, shared, readable], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(flipper);
    await new Promise<void>((resolve, reject) => {
      flipper.stdout?.once('data', () => resolve());
      flipper.once('exit', (code) => reject(new Error(`the other user's process exited (${code})`)));
    });
    const outcomes = new Map<string, number>();
    for (let i = 0; i < READS; i += 1) {
      const read = await tokenFromFile(join(shared, 'token'), []);
      const outcome = read.isOk() ? `token ${read.value}` : read.error.replace(/\(.*\)|\/\S+/g, '…');
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    expect(flipper.exitCode, 'the other user kept flipping').toBeNull();
    // Each outcome with how often: the refusals (the link's owner, the file's owner) show that both states were seen.
    expect([...outcomes.keys()].filter((o) => o.startsWith('token ')), JSON.stringify([...outcomes])).toEqual([]);
  }, 60_000);

  it('refuses a file with a second name in a sticky directory others may write, which another user could have linked there, and takes one elsewhere', async () => {
    const { shared, readable } = await layout();
    // Root's, readable by all, linked under the token file's name: what another user can do where fs.protected_hardlinks is off.
    const planted = join(shared, 'token');
    await link(readable, planted);
    const read = await tokenFromFile(planted, []);
    expect(read.isOk() ? `token ${read.value}` : read.error).toMatch(/^has 2 names \(hard links\) and is in the directory .*shared, which others may write/);
    // In a directory only root may write, a second name is root's own doing: taken (with the warning for mode 0644).
    const own = join(shared, '..', 'own-name');
    await link(readable, own);
    const warnings: string[] = [];
    expect((await tokenFromFile(own, warnings))._unsafeUnwrap()).toBe(KNOWN);
    expect(warnings).toEqual([expect.stringContaining('is readable by every user')]);
  });
});
