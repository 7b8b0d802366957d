/** Temporary install roots with plugin files, for binding tests. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A scratch directory holding install roots and a private copy directory. */
export interface Scratch {
  /** The scratch directory. */
  readonly base: string;
  /** `<base>/root`: the install root. */
  readonly root: string;
  /** `<base>/exec`: the verified-copy directory. */
  readonly copyDir: string;
  /** Writes a file below the install root (mode 0755 by default). */
  write(relative: string, content: string | Buffer, mode?: number): string;
  /** Removes everything. */
  dispose(): void;
}

/** Creates a scratch directory under the OS temp dir. */
export function scratch(): Scratch {
  const base = mkdtempSync(join(tmpdir(), 'binding-'));
  const root = join(base, 'root');
  mkdirSync(root);
  return {
    base,
    root,
    copyDir: join(base, 'exec'),
    write(relative, content, mode = 0o755) {
      const path = join(root, relative);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content, { mode });
      return path;
    },
    dispose: () => rmSync(base, { recursive: true, force: true }),
  };
}
