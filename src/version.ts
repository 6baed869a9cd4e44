// feedsub's own version (from package.json) and the one-line version report of `feedsub --version`.
import { readFileSync } from 'node:fs';

// Replaced by the release build (scripts/sea/bundle.ts defines it as a string literal); absent in development.
declare const __FEEDSUB_VERSION__: string | undefined;

/** Returns the `version` field of the repository's package.json; throws when it is missing. */
function readPackageVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  const parsed: unknown = JSON.parse(text);
  if (
    typeof parsed === 'object' &&
    parsed !== null &&
    'version' in parsed &&
    typeof parsed.version === 'string'
  ) {
    return parsed.version;
  }
  throw new Error('version: unable to read the version field of package.json');
}

/** feedsub's version: fixed at build time in the executable, read from package.json in development. */
export const FEEDSUB_VERSION: string =
  typeof __FEEDSUB_VERSION__ === 'string' ? __FEEDSUB_VERSION__ : readPackageVersion();

/** Returns "feedsub <version> (node <runtime version>)", e.g. "feedsub 0.1.0 (node v24.21.0)". */
export function versionLine(): string {
  return `feedsub ${FEEDSUB_VERSION} (node ${process.version})`;
}
