// Vitest global setup: builds the Landlock launcher from native/launcher.c into native/build/, where the sources
// look for it (src/sandbox/launcherBinary.ts), when it is missing or older than its source.
// @ts-expect-error The build script is plain JavaScript without declarations.
import { buildLauncher } from '../../scripts/build-launcher.mjs';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const failure = (buildLauncher as (output: string) => string | undefined)(fileURLToPath(new URL('../../native/build/mcp-plugin-launcher', import.meta.url)));
  // Only the tests that run the launcher need it: they fail on their own (launcher_unusable, naming the missing file).
  if (failure !== undefined) process.stderr.write(`cannot build the sandbox launcher (apt-get install gcc libc6-dev):\n${failure}\n`);
}
