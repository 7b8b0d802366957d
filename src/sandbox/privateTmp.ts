import privateTmpData from '../../etc/sandbox/private-tmp.json' with { type: 'json' };

/** The largest private /tmp a sandbox gets, in bytes (`etc/sandbox/private-tmp.json`). */
export const PRIVATE_TMP_MAX_BYTES: number = privateTmpData.maxBytes;

/**
 * The size of a sandbox's own writable /tmp: the plugin's memory cap, as its
 * /dev/shm is sized (a tmpfs lives in memory, and in the rlimit fallback no
 * control group charges its pages), but at most
 * {@link PRIVATE_TMP_MAX_BYTES}; that bound alone when the plugin has no
 * memory cap. Never 0, which a tmpfs reads as no size limit at all.
 *
 * @param memoryBytes - The plugin tree's memory cap, or `null` for none.
 */
export function privateTmpBytes(memoryBytes: number | null): number {
  return Math.max(1, Math.min(memoryBytes ?? PRIVATE_TMP_MAX_BYTES, PRIVATE_TMP_MAX_BYTES));
}
