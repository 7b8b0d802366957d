/**
 * The proxy npm runs behind while it resolves and installs a package: it
 * passes requests to the registry's origin and refuses every other one
 * (originProxy.ts). npm fetches a dependency given as a tarball URL while it
 * resolves the tree, from the host and before the lockfile check can refuse
 * it, so a package (at any depth of its tree) made the host send a request
 * to any address it named. Behind this proxy the request ends there, and
 * npm's failure names the URL, which npmFetch.ts reads as the dependency
 * source it is.
 *
 * A host that has its own https proxy (HTTPS_PROXY, which npm is given)
 * keeps it: that proxy is then where such requests are decided. An
 * HTTP_PROXY alone is not one: npm sends https URLs through HTTPS_PROXY only.
 */
import { originOf, originOnlyProxy } from './originProxy.js';

/** A running registry-only proxy. */
export interface RegistryOnlyProxy {
  /** `http://127.0.0.1:<port>`, for npm's `proxy` and `https-proxy`. */
  readonly url: string;
  /** The URLs it refused, in order. */
  readonly refused: readonly string[];
  /** The answers it would not dial (`name → address (kind)`): the registry's name resolved to addresses only the host reaches. */
  readonly hostOnly: readonly string[];
  /** Stops listening and ends the connections it holds. */
  close(): Promise<void>;
}

/**
 * Starts a proxy on 127.0.0.1 that forwards to `registry`'s origin only, and
 * to `redirectOrigins` (`host:port`: where a registry redirects its tarball
 * downloads, etc/npm-install.json `registryRedirectOrigins`).
 */
export async function startRegistryOnlyProxy(registry: string, redirectOrigins: readonly string[] = []): Promise<RegistryOnlyProxy> {
  const proxy = originOnlyProxy([originOf(new URL(registry)), ...redirectOrigins], 'only the registry is reachable while npm installs');
  const url = await proxy.listen();
  return { url, refused: proxy.refused, hostOnly: proxy.hostOnly, close: () => proxy.close() };
}
