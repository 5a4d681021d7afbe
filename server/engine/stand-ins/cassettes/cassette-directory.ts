import { statSync } from 'node:fs';
import { join } from 'node:path';
import { CassetteError, entryFiles, readEntry, type CassetteEntry, type LoadedEntry } from './cassette-entry.ts';
import { keyDigest } from './cassette-key.ts';

/** A loaded entry with its key's digest, computed once (a request is matched by digest). */
export interface IndexedEntry extends LoadedEntry {
  readonly digest: string;
}

interface Parsed {
  readonly stamp: string;
  readonly entry: IndexedEntry;
}

/**
 * What a file's stat says of its contents: any change and the file is read again. The size and
 * mtime change with an edit in place; the inode with a save that renames a new file over the
 * old (writeEntry, most editors); the ctime with a copy that keeps the old mtime (`cp -p`,
 * `touch -r`), since no one can set it. Two writes of the same size within one tick of the
 * file system's clock (milliseconds) look alike: not the pace of a hand edit or a re-recording.
 */
function stampOf(dir: string, file: string): string {
  try {
    const stat = statSync(join(dir, file), { bigint: true });
    return `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch (error) {
    throw new CassetteError(`Cassette ${join(dir, file)}: ${(error as Error).message}`);
  }
}

/**
 * The entries of a replay's cassette directory, as they are now, parsing only what changed.
 * Each call lists the directory and stats every entry file (one readdir and one stat a file,
 * no reading): an entry edited, added or removed while the server runs counts from the next
 * request on (docs/CASSETTES.md). The directory's own mtime would not do instead of the
 * files' stats: it changes when a file is added, removed or renamed, not when one is edited
 * in place. A file that no longer parses is an error on each request until it is fixed; the
 * entries parsed before stay cached for when it is.
 */
export class CassetteDirectory {
  readonly #dir: string;
  readonly #parse: (dir: string, file: string) => CassetteEntry;
  #parsed = new Map<string, Parsed>();

  /** `parse` reads one entry file (a test counts its calls). */
  constructor(dir: string, parse: (dir: string, file: string) => CassetteEntry = readEntry) {
    this.#dir = dir;
    this.#parse = parse;
  }

  /** Every entry, by file name; throws CassetteError naming a file that is not an entry. */
  entries(): IndexedEntry[] {
    const parsed = new Map<string, Parsed>();
    for (const file of entryFiles(this.#dir)) {
      // The stamp is taken before the file is read: a write that lands after it changes the
      // next stamp, so a half-written file is never kept as the last word.
      const stamp = stampOf(this.#dir, file);
      const known = this.#parsed.get(file);
      if (known?.stamp === stamp) {
        parsed.set(file, known);
        continue;
      }
      const entry = this.#parse(this.#dir, file);
      parsed.set(file, { stamp, entry: { file, entry, digest: keyDigest(entry.key) } });
    }
    // Files gone from the listing are forgotten with the old map.
    this.#parsed = parsed;
    return [...parsed.values()].map((known) => known.entry);
  }
}
