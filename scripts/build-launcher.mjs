// Compiles the sandbox launcher (native/launcher.c) for this machine: into dist/ for the package (`npm run build`),
// or to the path given (the tests' global setup builds native/build/ from the sources). Hardened flags; no
// dependency beyond the C library and the kernel's headers. Rebuilds only when the source is newer than the output.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'native', 'launcher.c');

/** Builds the launcher at `output` unless it is newer than the source; returns the compiler's error text, or undefined. */
export function buildLauncher(output = join(root, 'dist', 'mcp-plugin-launcher')) {
  if (process.platform !== 'linux') return undefined;
  try {
    if (statSync(output).mtimeMs >= statSync(source).mtimeMs) return undefined;
  } catch {
    // Not built yet.
  }
  mkdirSync(dirname(output), { recursive: true });
  const partial = `${output}.${process.pid}.tmp`;
  const flags = ['-std=gnu11', '-O2', '-Wall', '-Wextra', '-Werror', '-D_FORTIFY_SOURCE=2', '-fstack-protector-strong', '-fPIE', '-pie', '-Wl,-z,relro,-z,now', '-Wl,-z,noexecstack'];
  const result = spawnSync(process.env.CC ?? 'cc', [...flags, '-o', partial, source], { encoding: 'utf8' });
  if (result.status !== 0) return result.error?.message ?? result.stderr;
  chmodSync(partial, 0o755);
  renameSync(partial, output);
  return undefined;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const failure = buildLauncher(process.argv[2] ? resolve(process.argv[2]) : undefined);
  if (failure !== undefined) {
    process.stderr.write(`cannot build the sandbox launcher:\n${failure}\n`);
    process.exit(1);
  }
}
