/**
 * What a package's shipped wheels ask pip to fetch. A wheel's
 * `Requires-Dist` may name a direct reference (`name @ https://…`,
 * `name @ file:///…`, `name @ git+…`): pip then fetches that URL or reads
 * that path and, for an sdist or a repository, runs its build backend —
 * even with `--no-index` and `--only-binary :all:`. So before pip runs,
 * every wheel in the package's wheel folders is opened and any requirement
 * carrying an `@` is refused. Version specifiers and markers never need one,
 * so refusing every `@` also refuses what a parser might read differently
 * from pip.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { hostError, type HostError } from '../errors/HostError.js';
import settings from '../../etc/python-install.json' with { type: 'json' };

/** A `Requires-Dist` of a shipped wheel that names a URL or path instead of a version. */
export interface DirectReference {
  /** The wheel file, relative to the package root. */
  readonly wheel: string;
  /** The metadata entry inside the wheel. */
  readonly entry: string;
  /** The requirement as written. */
  readonly requirement: string;
}

const METADATA_ENTRY = /(^|\/)[^/]+\.dist-info\/METADATA$/i;

const refusal = (reason: 'direct_reference' | 'wheel_unreadable', message: string, details: Record<string, unknown>): HostError =>
  hostError('PLUGIN_PYTHON_INSTALL_FAILED', message, { details: { reason, ...details } });

/**
 * The `Requires-Dist` values of a METADATA document (RFC 822 headers; folded
 * lines continue the value; the first empty line ends them). Lines end as
 * Python's email parser, which pip reads METADATA with, ends them: at CR LF,
 * LF or a lone CR. Split at LF alone, a document whose lines end with CR was
 * one long header here while pip read its `Requires-Dist: x @ file:///…`
 * (review R9 F5).
 */
export function requiresDist(metadata: string): string[] {
  const values: string[] = [];
  let current: string | undefined;
  for (const line of metadata.split(/\r\n|\r|\n/)) {
    if (line === '') break;
    if (/^[ \t]/.test(line) && current !== undefined) {
      current += ` ${line.trim()}`;
      continue;
    }
    if (current !== undefined) values.push(current);
    // `s`: a value holding U+2028 or U+2029 (no line break to Python) is still this header's.
    const header = /^([^:\s]+):(.*)$/s.exec(line);
    current = header !== null && header[1]!.toLowerCase() === 'requires-dist' ? header[2]!.trim() : undefined;
  }
  if (current !== undefined) values.push(current);
  return values;
}

function openZip(path: string): Promise<ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: false, decodeStrings: true, validateEntrySizes: true }, (error, zip) => (error ? reject(error) : resolve(zip)));
  });
}

/** An entry's bytes, refused past the metadata cap whatever its header claims. */
function readEntry(zip: ZipFile, entry: Entry): Promise<string> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (error, stream) => {
      if (error) return reject(error);
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > settings.maxWheelMetadataBytes) {
          stream.destroy(new Error(`${entry.fileName} is larger than ${settings.maxWheelMetadataBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
  });
}

/** Every METADATA entry of one wheel, with its text. */
async function metadataOf(path: string): Promise<{ entry: string; text: string }[]> {
  const zip = await openZip(path);
  try {
    const found: { entry: string; text: string }[] = [];
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: Entry) => {
        if (!METADATA_ENTRY.test(entry.fileName)) return zip.readEntry();
        readEntry(zip, entry).then((text) => {
          found.push({ entry: entry.fileName, text });
          zip.readEntry();
        }, reject);
      });
      zip.readEntry();
    });
    return found;
  } finally {
    zip.close();
  }
}

/**
 * Refuses the package when a wheel in one of `wheelDirs` (folders pip is
 * given as `--find-links`) lists a direct reference among its requirements,
 * or cannot be read: `PLUGIN_PYTHON_INSTALL_FAILED` with `details.reason`
 * `direct_reference` (and `wheel`, `requirement`) or `wheel_unreadable`.
 */
export async function refuseDirectReferences(root: string, wheelDirs: readonly string[]): Promise<Result<void, HostError>> {
  for (const dir of wheelDirs) {
    const names = await readdir(join(root, dir)).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.toLowerCase().endsWith('.whl')).sort()) {
      const wheel = `${dir}/${name}`;
      let documents: { entry: string; text: string }[];
      try {
        documents = await metadataOf(join(root, dir, name));
      } catch (cause) {
        return err(refusal('wheel_unreadable', `the shipped wheel ${wheel} cannot be read: ${(cause as Error).message}`, { wheel }));
      }
      for (const { entry, text } of documents) {
        const requirement = requiresDist(text).find((value) => value.includes('@'));
        if (requirement !== undefined) {
          const reference: DirectReference = { wheel, entry, requirement };
          return err(
            refusal(
              'direct_reference',
              `the shipped wheel ${wheel} requires '${requirement}': a direct reference makes pip fetch a URL or path and may build it, so it is refused`,
              { ...reference },
            ),
          );
        }
      }
    }
  }
  return ok(undefined);
}
