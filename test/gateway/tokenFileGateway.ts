/** The library gateway of the token-file rotation tests: two clients, each with its token file. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serveGateway, type GatewayHandle } from '../../src/index.js';
import type { HostPool } from '../support/hostHarness.js';

/** A gateway whose tokens come from files, and those files. */
export interface TokenFileGateway {
  readonly gateway: GatewayHandle;
  /** The default client's token file (default-token). */
  readonly own: string;
  /** Client `ci`'s token file (ci-token). */
  readonly other: string;
}

/**
 * Serves a new profile of `pool` over HTTP (a free port) to the default
 * client, its token read from `own` (which holds `tokens.own`), and to client
 * `ci` with no policy, its token `tokens.ci` also read from `other`; both
 * files mode 0600. The gateway's notices go to `onNotice`. Closing the gateway
 * is the test's.
 */
export async function tokenFileGateway(pool: HostPool, tokens: { readonly own: string; readonly ci: string }, onNotice: (message: string) => void): Promise<TokenFileGateway> {
  const dir = await pool.profile();
  const own = join(dir, 'default-token');
  const other = join(dir, 'ci-token');
  await writeFile(own, `${tokens.own}\n`, { mode: 0o600 });
  await writeFile(other, `${tokens.ci}\n`, { mode: 0o600 });
  const host = await pool.open(dir);
  const served = await serveGateway(host, { http: { port: 0, tokenFile: own, clients: [{ name: 'ci', token: tokens.ci, tokenFile: other, policy: {} }], onNotice } });
  if (served.isErr()) throw served.error;
  return { gateway: served.value, own, other };
}
