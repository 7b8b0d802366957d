/**
 * The bound on what plugins may ask one gateway client at once. A plugin's
 * sampling, elicitation and roots requests are forwarded to the client whose
 * request caused them and wait for its answer; meanwhile the gateway holds
 * each one (its params in the host, the request on the client's stream, the
 * SDK's bookkeeping). The host lets one plugin process have 8 of them
 * waiting (etc/client-requests.json), but a client served by many plugins,
 * or by one plugin that restarts, could be made to hold without end by a
 * client that never answers. So each client holds at most
 * `maxPendingRequestsPerClient` of them, and over HTTP their bytes count
 * against the same share of `http.maxBodyBytesInFlight` as the client's
 * bodies and answers; one more is refused at once with a JSON-RPC error the
 * plugin gets.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { BodyBudget } from './streamableHttpTransport.js';

/**
 * The plugin requests waiting for one client's answer: the stdio peer's, or
 * an HTTP client's (a token), all its sessions together, since sessions cost
 * a client nothing to open.
 */
export class ClientAsks {
  readonly #max: number;
  readonly #budget: BodyBudget | undefined;
  #waiting = 0;

  /**
   * @param max - How many may wait at once.
   * @param budget - The client's share of `http.maxBodyBytesInFlight`, which their bytes are held against; none over stdio.
   */
  constructor(max: number, budget?: BodyBudget) {
    this.#max = max;
    this.#budget = budget;
  }

  /**
   * Sends `method` with `params` to the client through `send` once it fits
   * the bound, and holds its place until the answer, the timeout or the
   * cancellation settles it. Refused (an Invalid Request error, as the host
   * refuses a plugin past its own bound) without sending anything otherwise.
   */
  async ask<T>(method: string, params: unknown, send: () => Promise<T>): Promise<T> {
    if (this.#waiting >= this.#max) {
      throw new McpError(ErrorCode.InvalidRequest, `${method} refused: the gateway client already has ${this.#max} requests of plugins waiting for its answer (maxPendingRequestsPerClient)`);
    }
    // Measured as the client receives it; params the client will see are serialized once more by the SDK on the way.
    const bytes = this.#budget === undefined ? 0 : Buffer.byteLength(JSON.stringify(params ?? {}));
    if (this.#budget !== undefined && !this.#budget.take(bytes)) {
      throw new McpError(ErrorCode.InvalidRequest, `${method} refused: the gateway client holds its share of http.maxBodyBytesInFlight in requests, answers and plugin requests waiting for it`);
    }
    this.#waiting += 1;
    try {
      return await send();
    } finally {
      this.#waiting -= 1;
      this.#budget?.give(bytes);
    }
  }
}
