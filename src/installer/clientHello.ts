/**
 * Reads the TLS server name (SNI) a client asks for from the first bytes it
 * sends into a tunnel: the ClientHello, which TLS sends in plain text. The
 * origin-only install proxy (originProxy.ts) opens a tunnel to an admitted
 * `host:port`, but which site of that address the client then talks to is
 * the client's choice: behind a CDN (pypi.org and files.pythonhosted.org are
 * served by one) code pip runs could name any other site the CDN serves. The
 * proxy lets the tunnel carry bytes only once this says the name is the
 * admitted host's.
 *
 * Held to one TLS record (at most 2^14 bytes of payload, RFC 8446 5.1) that
 * holds the whole ClientHello: a client that splits it, sends a record
 * larger than that, or anything that is not a handshake record, is refused,
 * never buffered further. Node, OpenSSL and pip's clients send the
 * ClientHello in one record.
 */

/** What the first bytes of a tunnel say, so far. */
export type ClientHelloReading =
  /** Not enough bytes yet (`need` at most: the whole first record). */
  | { readonly kind: 'incomplete'; readonly need: number }
  /** Not a ClientHello this proxy reads: `reason` says why. */
  | { readonly kind: 'refused'; readonly reason: string }
  /** A ClientHello; `serverName` is its SNI host name, lower case and without a trailing dot, undefined when it names none. */
  | { readonly kind: 'hello'; readonly serverName: string | undefined };

/** The largest TLS record payload (RFC 8446 5.1: 2^14 bytes). */
export const MAX_RECORD_PAYLOAD = 16_384;
const RECORD_HEADER = 5;
const HANDSHAKE = 0x16;
const CLIENT_HELLO = 0x01;
const SERVER_NAME = 0x0000;
const HOST_NAME = 0x00;
// The extensions that carry the name the client really wants, encrypted: the outer SNI is then a front's.
const ENCRYPTED_NAME_EXTENSIONS = new Set([0xfe0d /* encrypted_client_hello */, 0xffce /* draft ESNI */]);
// A DNS name as SNI carries it (RFC 6066 3: ASCII, no IP literal); punycode labels are ASCII.
const HOST_NAME_SYNTAX = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/i;

/** A cursor over a byte range that fails, never reads past its end. */
class Reader {
  private at: number;
  constructor(
    private readonly bytes: Buffer,
    start: number,
    private readonly end: number,
  ) {
    this.at = start;
  }
  get left(): number {
    return this.end - this.at;
  }
  skip(n: number): boolean {
    if (n > this.left) return false;
    this.at += n;
    return true;
  }
  uint(size: 1 | 2 | 3): number | undefined {
    if (size > this.left) return undefined;
    const value = this.bytes.readUIntBE(this.at, size);
    this.at += size;
    return value;
  }
  /** A sub-range of `n` bytes, consumed here. */
  slice(n: number): Reader | undefined {
    if (n > this.left) return undefined;
    const inner = new Reader(this.bytes, this.at, this.at + n);
    this.at += n;
    return inner;
  }
  text(): string {
    return this.bytes.toString('latin1', this.at, this.end);
  }
}

const refused = (reason: string): ClientHelloReading => ({ kind: 'refused', reason });

/**
 * Reads `bytes`, the first bytes a client sent into a tunnel. Needs at most
 * one record header and its payload ({@link MAX_RECORD_PAYLOAD}); what
 * follows the first record is not read.
 */
export function readClientHello(bytes: Buffer): ClientHelloReading {
  if (bytes.length >= 1 && bytes[0] !== HANDSHAKE) return refused('not a TLS handshake');
  if (bytes.length < RECORD_HEADER) return { kind: 'incomplete', need: RECORD_HEADER };
  if (bytes[1] !== 0x03) return refused('not a TLS record version');
  const length = bytes.readUInt16BE(3);
  if (length === 0 || length > MAX_RECORD_PAYLOAD) return refused(`a TLS record of ${length} bytes`);
  if (bytes.length < RECORD_HEADER + length) return { kind: 'incomplete', need: RECORD_HEADER + length };
  const record = new Reader(bytes, RECORD_HEADER, RECORD_HEADER + length);
  if (record.uint(1) !== CLIENT_HELLO) return refused('the first handshake message is not a ClientHello');
  const helloLength = record.uint(3);
  // A ClientHello that continues in a later record: refused rather than gathered across records.
  const hello = helloLength === undefined ? undefined : record.slice(helloLength);
  if (hello === undefined) return refused('a ClientHello split across TLS records');
  // legacy_version, random, legacy_session_id, cipher_suites, legacy_compression_methods.
  if (!hello.skip(2 + 32)) return refused('a truncated ClientHello');
  const sessionId = hello.uint(1);
  if (sessionId === undefined || !hello.skip(sessionId)) return refused('a truncated ClientHello');
  const suites = hello.uint(2);
  if (suites === undefined || !hello.skip(suites)) return refused('a truncated ClientHello');
  const compression = hello.uint(1);
  if (compression === undefined || !hello.skip(compression)) return refused('a truncated ClientHello');
  if (hello.left === 0) return { kind: 'hello', serverName: undefined };
  const extensionsLength = hello.uint(2);
  const extensions = extensionsLength === undefined ? undefined : hello.slice(extensionsLength);
  if (extensions === undefined || hello.left !== 0) return refused('a malformed ClientHello extension list');
  let serverName: string | undefined;
  let named = false;
  while (extensions.left > 0) {
    const type = extensions.uint(2);
    const size = extensions.uint(2);
    const data = size === undefined ? undefined : extensions.slice(size);
    if (type === undefined || data === undefined) return refused('a malformed ClientHello extension');
    if (ENCRYPTED_NAME_EXTENSIONS.has(type)) return refused('an encrypted ClientHello (the server name it asks for is hidden)');
    if (type !== SERVER_NAME) continue;
    // Two server_name extensions, or two names in one: a server may pick either, so neither is trusted.
    if (named) return refused('two server_name extensions');
    named = true;
    const listLength = data.uint(2);
    const list = listLength === undefined ? undefined : data.slice(listLength);
    if (list === undefined || data.left !== 0) return refused('a malformed server_name extension');
    const nameType = list.uint(1);
    const nameLength = list.uint(2);
    const name = nameLength === undefined ? undefined : list.slice(nameLength);
    if (nameType !== HOST_NAME || name === undefined || list.left !== 0) return refused('a server_name extension that is not one host name');
    const text = name.text();
    if (!HOST_NAME_SYNTAX.test(text)) return refused('a server name that is not a DNS name');
    serverName = text.toLowerCase().replace(/\.$/, '');
  }
  return { kind: 'hello', serverName };
}
