// The real-world feed corpus kept in the repository as test data (test/fixtures/corpus, see its SOURCES.md).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The corpus folder as a file URL ending in a slash. */
export const CORPUS_URL = new URL('../fixtures/corpus/', import.meta.url);

/** The corpus folder as a path. */
export const CORPUS_DIR = fileURLToPath(CORPUS_URL);

/** The bytes of a corpus file, by its path inside the corpus (`feedparser/…`, `miniflux/…`, `netnewswire-rsparser/…`). */
export function corpusBytes(rel: string): Buffer {
  return readFileSync(new URL(rel, CORPUS_URL));
}
