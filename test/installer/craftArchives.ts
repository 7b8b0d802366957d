/**
 * Builds package archives at test time, including hostile ones no ordinary
 * tool would write: tar headers are encoded one by one with tar's own
 * `Header`, and zip names that yazl refuses are patched into its output.
 */
import { generateKeyPairSync, sign, createHash, type KeyObject } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import yazl from 'yazl';

/** One tar member to encode. */
export interface TarMember {
  readonly path: string;
  readonly type?:
    | 'File'
    | 'Directory'
    | 'SymbolicLink'
    | 'Link'
    | 'CharacterDevice'
    | 'BlockDevice'
    | 'FIFO'
    | 'GNUDumpDir'
    | 'SparseFile'
    | 'ExtendedHeader'
    | 'NextFileHasLongPath'
    | 'NextFileHasLongLinkpath';
  readonly data?: Buffer | string;
  readonly mode?: number;
  readonly linkpath?: string;
}

const BLOCK = 512;

function encodeMember(member: TarMember): Buffer[] {
  const data = typeof member.data === 'string' ? Buffer.from(member.data) : (member.data ?? Buffer.alloc(0));
  const type = member.type ?? 'File';
  const header = new Header({
    path: member.path,
    type,
    mode: member.mode ?? (type === 'Directory' ? 0o755 : 0o644),
    size: data.length,
    mtime: new Date(0),
    uid: 0,
    gid: 0,
    ...(member.linkpath === undefined ? {} : { linkpath: member.linkpath }),
  });
  const block = Buffer.alloc(BLOCK);
  header.encode(block, 0);
  const padding = Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK);
  return [block, data, padding];
}

/** One PAX record, `<length> <key>=<value>\n`, whose length counts its own digits. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body);
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body);
  return `${length}${body}`;
}

/** A PAX extended header member ('x') holding the records, for the member that follows it. */
export function paxHeader(records: Readonly<Record<string, string>>): TarMember {
  return { path: 'PaxHeader/entry', type: 'ExtendedHeader', data: Object.entries(records).map(([k, v]) => paxRecord(k, v)).join('') };
}

/** An uncompressed tar of the members, ended by two zero blocks, then `trailingBytes` of zeros. */
export function tarOf(members: readonly TarMember[], trailingBytes = 0): Buffer {
  return Buffer.concat([...members.flatMap(encodeMember), Buffer.alloc(2 * BLOCK + trailingBytes)]);
}

/** A gzip-compressed tar of the members. */
export function tgzOf(members: readonly TarMember[], trailingBytes = 0): Buffer {
  return gzipSync(tarOf(members, trailingBytes));
}

/** One zip member to encode. */
export interface ZipMember {
  /** The name as stored; may be one yazl refuses (`../x`, `/etc/x`, `a\\b`). */
  readonly name: string;
  readonly data?: Buffer | string;
  /** Full unix mode including the file type bits, e.g. 0o120777 for a link. */
  readonly mode?: number;
  readonly directory?: boolean;
  readonly compress?: boolean;
}

const placeholderFor = (index: number, length: number): string => {
  const tag = `Q${index.toString(36)}Z`;
  return (tag + 'x'.repeat(Math.max(0, length - tag.length))).slice(0, Math.max(length, tag.length));
};

/** A zip of the members. Names yazl refuses are written through a placeholder of the same length and patched in. */
export async function zipOf(members: readonly ZipMember[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const patches: Array<[string, string]> = [];
  members.forEach((member, index) => {
    const needsPatch = /(^|\/)\.\.(\/|$)|^\/|\\|^[A-Za-z]:|\0/.test(member.name);
    const stored = needsPatch ? placeholderFor(index, Buffer.byteLength(member.name)) : member.name;
    if (needsPatch) patches.push([stored, member.name]);
    if (member.directory === true) {
      zip.addEmptyDirectory(stored, member.mode === undefined ? {} : { mode: member.mode });
    } else {
      const data = typeof member.data === 'string' ? Buffer.from(member.data) : (member.data ?? Buffer.alloc(0));
      zip.addBuffer(data, stored, { compress: member.compress ?? true, ...(member.mode === undefined ? {} : { mode: member.mode }) });
    }
  });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  let out = Buffer.concat(chunks);
  for (const [placeholder, name] of patches) {
    const from = Buffer.from(placeholder);
    const to = Buffer.from(name);
    if (from.length !== to.length) throw new Error(`placeholder length mismatch for ${name}`);
    let at = out.indexOf(from);
    while (at !== -1) {
      to.copy(out, at);
      at = out.indexOf(from, at + to.length);
    }
  }
  return out;
}

/** A fresh Ed25519 key pair with the public key in both accepted spellings. */
export function ed25519Keys(): { privateKey: KeyObject; pem: string; raw: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('base64');
  return { privateKey, pem, raw };
}

/** `sha256:<hex>` of some bytes. */
export function digestOf(bytes: Buffer): `sha256:${string}` {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** The base64 Ed25519 signature of a package, over the UTF-8 text of its digest. */
export function signPackage(bytes: Buffer, privateKey: KeyObject): string {
  return sign(null, Buffer.from(digestOf(bytes), 'utf8'), privateKey).toString('base64');
}

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;

/**
 * Rewrites the general-purpose flags and compression method of every entry,
 * in both its local header and its central directory record.
 */
export function patchZipEntries(zip: Buffer, fields: { flags?: number; method?: number }): Buffer {
  const out = Buffer.from(zip);
  for (let at = 0; at + 4 <= out.length; at++) {
    const signature = out.readUInt32LE(at);
    const base = signature === LOCAL_HEADER ? at + 6 : signature === CENTRAL_HEADER ? at + 8 : -1;
    if (base < 0) continue;
    if (fields.flags !== undefined) out.writeUInt16LE(out.readUInt16LE(base) | fields.flags, base);
    if (fields.method !== undefined) out.writeUInt16LE(fields.method, base + 2);
  }
  return out;
}

/**
 * Rewrites fields of the local file header of the `index`-th entry only,
 * leaving its central directory record as it was: a name of the same byte
 * length, a compression method, a CRC.
 */
export function patchLocalHeader(zip: Buffer, index: number, fields: { name?: string; method?: number; crc32?: number }): Buffer {
  const out = Buffer.from(zip);
  let seen = -1;
  for (let at = 0; at + 30 <= out.length; at++) {
    if (out.readUInt32LE(at) !== LOCAL_HEADER || ++seen !== index) continue;
    if (fields.method !== undefined) out.writeUInt16LE(fields.method, at + 8);
    if (fields.crc32 !== undefined) out.writeUInt32LE(fields.crc32, at + 14);
    if (fields.name !== undefined) {
      const name = Buffer.from(fields.name);
      if (name.length !== out.readUInt16LE(at + 26)) throw new Error('a patched local name must keep its byte length');
      name.copy(out, at + 30);
    }
    return out;
  }
  throw new Error(`no local header number ${index}`);
}

/** Local entries, then their central directory records, then the end-of-central-directory record naming them (no comment). */
export function zipFromParts(locals: readonly Buffer[], centrals: readonly Buffer[]): Buffer {
  const directory = Buffer.concat(centrals);
  const offset = locals.reduce((sum, entry) => sum + entry.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(centrals.length, 8);
  end.writeUInt16LE(centrals.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
