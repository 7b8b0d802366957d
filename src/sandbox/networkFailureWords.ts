/**
 * Whether a plugin's own words read like a network failure the sandbox
 * caused. Node and Go name the call (`connect EACCES`, `socket: operation not
 * permitted`); Python names only the errno of a socket call, with no path
 * after it (`[Errno 13] Permission denied` for a connect Landlock refused,
 * `[Errno 1] Operation not permitted` for a socket the seccomp program
 * refused), where a file's errno is always followed by the file's name.
 */
import hints from '../../etc/sandbox-failure-hints.json' with { type: 'json' };

const ERRNO_PATTERNS = hints.socketErrnoPatterns.map((pattern) => new RegExp(pattern));

/** Whether `text` (a failure's message, result or stderr tail) holds one of the network failure wordings of `etc/sandbox-failure-hints.json`. */
export function readsLikeNetworkFailure(text: string): boolean {
  return hints.networkPatterns.some((pattern) => text.includes(pattern)) || ERRNO_PATTERNS.some((pattern) => pattern.test(text));
}
