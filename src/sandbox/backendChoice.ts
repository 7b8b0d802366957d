import hostOptionData from '../../etc/host-options.json' with { type: 'json' };

/** The Linux backends a host may ask for: the Landlock launcher when proved else bubblewrap, or one of them forced. */
export const SANDBOX_BACKEND_CHOICES = ['auto', 'landlock', 'bubblewrap'] as const;

/** The Linux backend a host asks for (see `SandboxSpawnerOptions.backend`). */
export type SandboxBackendChoice = (typeof SANDBOX_BACKEND_CHOICES)[number];

/** Whether `value` names one of {@link SANDBOX_BACKEND_CHOICES}. */
export function isSandboxBackendChoice(value: unknown): value is SandboxBackendChoice {
  return (SANDBOX_BACKEND_CHOICES as readonly unknown[]).includes(value);
}

/** The backend asked for when the options name none (`etc/host-options.json`). */
export const DEFAULT_SANDBOX_BACKEND: SandboxBackendChoice = isSandboxBackendChoice(hostOptionData.defaults.sandboxBackend) ? hostOptionData.defaults.sandboxBackend : 'bubblewrap';
