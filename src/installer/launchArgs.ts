/** The placeholder in install `args` that stands for the plugin's data directory (its HOME). */
export const DATA_DIR_PLACEHOLDER = '${data_dir}';

/** The install `args` with {@link DATA_DIR_PLACEHOLDER} replaced by `dataDir`, as the binding records them. */
export function resolveLaunchArgs(args: readonly string[], dataDir: string): string[] {
  return args.map((arg) => arg.replaceAll(DATA_DIR_PLACEHOLDER, dataDir));
}
