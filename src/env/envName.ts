/**
 * What the operating system accepts as an environment variable name and
 * value. POSIX only forbids `=` (it separates name from value) and NUL (it
 * ends the C string); Node refuses both when spawning. Anything else,
 * including lowercase and punctuation, is a real name a process can see.
 */

/** Whether `name` can be the name of an environment variable. */
export function isValidEnvName(name: string): boolean {
  return name.length > 0 && !name.includes('=') && !name.includes('\0');
}

/** Whether `value` can be the value of an environment variable. */
export function isValidEnvValue(value: string): boolean {
  return !value.includes('\0');
}

/**
 * A name as it may be shown in a message: control characters escaped so a
 * hostile manifest cannot write terminal escape sequences into host output.
 */
export function printableEnvName(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
