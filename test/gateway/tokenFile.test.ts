/**
 * The bearer token file of the gateway's configuration (attack review S):
 * it is read as one regular file and no more than a token's worth of it. A
 * FIFO at the path made `serve` wait for a writer forever, and a device or
 * a huge file was read whole; both are refused. Real files and a real FIFO.
 */
import { execFileSync } from 'node:child_process';
import { chmod, chown, lchown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkGatewayConfig, resolveGatewayConfig } from '../../src/gateway/gatewayConfig.js';

const TOKEN = 'token-file-test-0123456789';
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function resolvedWith(file: string): Promise<{ token?: string | undefined; code?: string; message?: string }> {
  const config = checkGatewayConfig({ transport: 'http', http: { token: { file } } })._unsafeUnwrap();
  const resolved = await resolveGatewayConfig(config, {});
  return resolved.isOk() ? { token: resolved.value.gateway.http?.token } : { code: resolved.error.code, message: resolved.error.message };
}

describe('the gateway token file', () => {
  it('gives its first line as the token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
    dirs.push(dir);
    await writeFile(join(dir, 'token'), `${TOKEN}\nignored\n`, { mode: 0o600 });
    expect(await resolvedWith(join(dir, 'token'))).toEqual({ token: TOKEN });
  });

  it('refuses a FIFO and a device instead of waiting on them or reading them whole, and a file larger than a token needs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
    dirs.push(dir);
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    for (const path of [fifo, '/dev/zero']) {
      expect(await resolvedWith(path)).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringContaining('not a regular file') });
    }
    await writeFile(join(dir, 'large'), `${TOKEN}\n${'x'.repeat(1 << 20)}`, { mode: 0o600 });
    expect(await resolvedWith(join(dir, 'large'))).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringContaining('larger than') });
  });

  it('refuses a file another user could write (group or other writable, or owned by another user than this one and root), and warns of one every user can read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
    dirs.push(dir);
    const file = join(dir, 'token');
    await writeFile(file, `${TOKEN}\n`);
    const resolve = async (): Promise<{ token?: string | undefined; warnings?: readonly string[]; message?: string }> => {
      const config = checkGatewayConfig({ transport: 'http', http: { token: { file } } })._unsafeUnwrap();
      const resolved = await resolveGatewayConfig(config, {});
      return resolved.isOk() ? { token: resolved.value.gateway.http?.token, warnings: resolved.value.warnings } : { message: resolved.error.message };
    };
    for (const mode of [0o620, 0o602, 0o666]) {
      await chmod(file, mode);
      expect(await resolve()).toEqual({ message: expect.stringContaining('is writable by its group or by others') });
    }
    // A Kubernetes secret mount: root's, mode 0644. Taken, with a warning; a private file without one.
    await chmod(file, 0o644);
    expect(await resolve()).toEqual({ token: TOKEN, warnings: [expect.stringMatching(/token file .* is readable by every user \(mode 0644\)/)] });
    await chmod(file, 0o600);
    expect(await resolve()).toEqual({ token: TOKEN, warnings: [] });
    if (process.geteuid?.() === 0) {
      await chown(file, 65534, 65534);
      expect(await resolve()).toEqual({ message: expect.stringContaining('is owned by uid 65534, neither this process') });
    }
  });

  it('follows a symbolic link of this user or root (a Kubernetes mount) and refuses one another user owns, whatever it points at', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
    dirs.push(dir);
    const file = join(dir, 'token');
    await writeFile(file, `${TOKEN}\n`, { mode: 0o600 });
    // As a Kubernetes secret volume lays it out: token -> ..data/token, ..data -> the dated directory.
    await mkdir(join(dir, '..2026_11_27'));
    await writeFile(join(dir, '..2026_11_27', 'token'), `${TOKEN}\n`, { mode: 0o600 });
    await symlink('..2026_11_27', join(dir, '..data'));
    await symlink('..data/token', join(dir, 'mounted'));
    expect(await resolvedWith(join(dir, 'mounted'))).toEqual({ token: TOKEN });
    if (process.geteuid?.() !== 0) return;
    // Another user's link to a file only this one may read: that user chose which file the token comes from.
    const planted = join(dir, 'planted');
    await symlink(file, planted);
    await lchown(planted, 65534, 65534);
    expect(await resolvedWith(planted)).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringMatching(/through the symbolic link .*planted, owned by uid 65534, neither this process's user \(0\) nor root/) });
    // A root link to another user's link: the second is on the way too.
    await symlink(planted, join(dir, 'chained'));
    expect(await resolvedWith(join(dir, 'chained'))).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringContaining('planted, owned by uid 65534') });
  });
});

describe('the directories on the way to the gateway token file', () => {
  it('refuses a file in a directory another user owns, or one others may write without the sticky bit, and takes one in a sticky directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
    dirs.push(dir);
    const inner = join(dir, 'secrets');
    await mkdir(inner, { mode: 0o700 });
    const file = join(inner, 'token');
    await writeFile(file, `${TOKEN}\n`, { mode: 0o600 });
    expect(await resolvedWith(file)).toEqual({ token: TOKEN });
    // Whoever may write the directory can rename the file away and put theirs in its place.
    for (const mode of [0o770, 0o707, 0o777]) {
      await chmod(inner, mode);
      expect(await resolvedWith(file)).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringContaining(`through the directory ${inner}, writable by its group or by others without the sticky bit`) });
    }
    // Sticky (as /tmp and a Kubernetes secret volume are): only the file's owner may rename or remove it there.
    await chmod(inner, 0o1777);
    expect(await resolvedWith(file)).toEqual({ token: TOKEN });
    await chmod(inner, 0o700);
    if (process.geteuid?.() !== 0) return;
    await chown(inner, 65534, 65534);
    expect(await resolvedWith(file)).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringContaining(`through the directory ${inner}, owned by uid 65534, neither this process's user (0) nor root`) });
  });

  it('refuses a file reached through a symbolic link to a directory when another user owns that link, and follows one of this user', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'token-file-'));
    dirs.push(dir);
    const real = join(dir, 'real');
    await mkdir(real, { mode: 0o700 });
    await writeFile(join(real, 'token'), `${TOKEN}\n`, { mode: 0o600 });
    await symlink('real', join(dir, 'mine'));
    // The link is a directory's name in the middle of the path, not the file's.
    expect(await resolvedWith(join(dir, 'mine', 'token'))).toEqual({ token: TOKEN });
    if (process.geteuid?.() !== 0) return;
    await symlink(real, join(dir, 'theirs'));
    await lchown(join(dir, 'theirs'), 65534, 65534);
    expect(await resolvedWith(join(dir, 'theirs', 'token'))).toMatchObject({ code: 'HOST_INVALID_OPTIONS', message: expect.stringMatching(/through the symbolic link .*theirs, owned by uid 65534/) });
    // A '..' after a link climbs from where the link led, as the kernel resolves it.
    await mkdir(join(real, 'sub'), { mode: 0o700 });
    await symlink(join(real, 'sub'), join(dir, 'down'));
    expect(await resolvedWith(`${join(dir, 'down')}/../token`)).toEqual({ token: TOKEN });
  });
});
