/**
 * The gateway's bearer tokens, one per client, and their rotation: a token
 * read from a file is read again every `tokenFileCheckMs`, and a changed one
 * replaces the old at once, with no grace window (docs/gateway.md, "HTTP
 * security"): a token is often rotated because it leaked.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayClientPolicy } from './clientPolicy.js';
import { tokenFromFile } from './tokenFile.js';

/** One client of the HTTP side, as the listener knows it: its current token may change, the client does not. */
export interface TokenHolder {
  /** The client's name (audit records, fair share). */
  readonly name: string;
  /** What it may see and call. */
  readonly policy: GatewayClientPolicy;
  /** The file its token is read from, when it is read from one. */
  readonly tokenFile: string | undefined;
  /** Its token now. */
  token: string;
  /** The SHA-256 of {@link TokenHolder.token}. */
  digest: Buffer;
}

/** The SHA-256 of a token: digests have one length whatever the token's, so comparing them tells nothing of a token's length. */
export const tokenDigest = (token: string): Buffer => createHash('sha256').update(token).digest();

/** The gateway's clients by their tokens, with the token files read again on a timer. */
export class BearerTokens {
  readonly holders: readonly TokenHolder[];
  readonly #notice: (message: string) => void;
  readonly #rotated: (holder: TokenHolder) => void;
  /**
   * The SHA-256 (hex) of every token rotated away, whichever client held it: never taken again, by that client or
   * another. A token is often rotated because it leaked, and a file restored from a backup, or another client's file
   * given the old token, would let the leaked one in again (attack review R1).
   */
  readonly #retired = new Set<string>();
  readonly #timer: NodeJS.Timeout | undefined;
  /** Grows whenever a token changes: what was accepted under an older generation is checked again. */
  #generation = 0;
  #reading = false;
  /** The last problem each file had, and whether it was told already: one seen on a single read may be a write in progress. */
  readonly #problems = new Map<TokenHolder, { readonly problem: string; told: boolean }>();

  /**
   * `notice` hears what an operator should know (a token read again, a file
   * refused); `rotated` hears which client's token changed, after the change.
   */
  constructor(holders: readonly TokenHolder[], checkMs: number, notice: (message: string) => void, rotated: (holder: TokenHolder) => void) {
    this.holders = holders;
    // What hears a notice or a rotation is the caller's code: if it throws, the timer's promise must not reject (an
    // unhandled rejection ends the process), and the rotation has happened all the same.
    this.#notice = (message) => {
      try {
        notice(message);
      } catch {
        // Nothing else to tell it to.
      }
    };
    this.#rotated = (holder) => {
      try {
        rotated(holder);
      } catch {
        // As above.
      }
    };
    if (holders.some((h) => h.tokenFile !== undefined)) {
      this.#timer = setInterval(() => void this.#readAgain(), checkMs);
      this.#timer.unref();
    }
  }

  /** Grows whenever a token changes. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The client whose token is `token`. Every client's digest is compared, in
   * constant time, so the time taken says nothing of which one matched.
   */
  holderOf(token: string): TokenHolder | undefined {
    const presented = tokenDigest(token);
    let found: TokenHolder | undefined;
    for (const h of this.holders) if (timingSafeEqual(presented, h.digest) && found === undefined) found = h;
    return found;
  }

  /** Stops reading the files. */
  stop(): void {
    clearInterval(this.#timer);
  }

  async #readAgain(): Promise<void> {
    // A slow file system must not pile reads up.
    if (this.#reading) return;
    this.#reading = true;
    try {
      for (const holder of this.holders) if (holder.tokenFile !== undefined) await this.#readFile(holder, holder.tokenFile);
    } finally {
      this.#reading = false;
    }
  }

  async #readFile(holder: TokenHolder, file: string): Promise<void> {
    const warnings: string[] = [];
    const read = await tokenFromFile(file, warnings);
    const token = read.isOk() ? read.value : undefined;
    if (token === holder.token) {
      this.#problems.delete(holder);
      return;
    }
    // One token, one client: a token two clients share would make the policy depend on their order.
    const problem = read.isErr()
      ? `token file ${file} ${read.error}`
      : this.holders.some((h) => h !== holder && h.token === token)
        ? `token file ${file} holds the token of another client`
        : token !== undefined && this.#retired.has(tokenDigest(token).toString('hex'))
          ? `token file ${file} holds a token rotated away before, which is never taken again; write a new one`
          : undefined;
    if (problem !== undefined || token === undefined) {
      this.#keepToken(holder, problem ?? `token file ${file} is empty`);
      return;
    }
    this.#problems.delete(holder);
    this.#retired.add(holder.digest.toString('hex'));
    holder.token = token;
    holder.digest = tokenDigest(token);
    this.#generation += 1;
    for (const warning of warnings) this.#notice(warning);
    this.#notice(`the bearer token of client '${holder.name}' changed in ${file}: the previous one is refused from now on`);
    this.#rotated(holder);
  }

  /**
   * The last good token stays when its file cannot give another: a file caught half-written, removed or made unsafe must
   * neither let anyone else in nor lock the client out. A problem is told when a second read finds it still there.
   */
  #keepToken(holder: TokenHolder, problem: string): void {
    const last = this.#problems.get(holder);
    if (last?.problem !== problem) {
      this.#problems.set(holder, { problem, told: false });
      return;
    }
    if (last.told) return;
    last.told = true;
    this.#notice(`${problem}; client '${holder.name}' keeps its previous token`);
  }
}
