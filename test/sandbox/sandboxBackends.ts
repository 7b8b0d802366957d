import type { SandboxBackendChoice } from '../../src/sandbox/SandboxSpawner.js';

/**
 * The Linux backends every enforcement test runs against, each forced (no
 * `auto` fallback can hide one that does not confine): the Landlock launcher
 * built from native/launcher.c and bubblewrap.
 */
export const LINUX_BACKENDS: readonly Exclude<SandboxBackendChoice, 'auto'>[] = ['landlock', 'bubblewrap'];
