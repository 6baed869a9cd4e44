// URL rules shared by endpoints and subscriptions: normalization, credentials, and the early private-address check.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { isForbiddenAddress } from '../net/guard.ts';
import type { FieldIssue } from '../errors.ts';

export type NormalizedFeedUrl = { url: string; credentials: string | null; credentialKey: string };

/** Normalizes a feed URL so equivalent spellings share one feed record: lower-case scheme and host,
 *  no default port, no fragment, credentials split off. Assumes an absolute http(s) URL. */
export function normalizeFeedUrl(input: string): NormalizedFeedUrl {
  const u = new URL(input);
  const credentials =
    u.username || u.password
      ? `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`
      : null;
  u.username = '';
  u.password = '';
  u.hash = '';
  return {
    url: u.toString(),
    credentials,
    credentialKey: credentials
      ? createHash('sha256').update(credentials).digest('hex').slice(0, 32)
      : '',
  };
}

/** A field issue when the URL names a host that can only be private (a literal private IP or localhost)
 *  and private targets are not allowed; the connect-time check catches the rest (names resolving to private IPs). */
export function privateHostIssue(
  path: string,
  url: string,
  allowPrivate: boolean,
): FieldIssue | undefined {
  if (allowPrivate) return undefined;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const local = host === 'localhost' || host.endsWith('.localhost');
  if (local || (isIP(host) !== 0 && isForbiddenAddress(host))) {
    return {
      path,
      message:
        'must not point to a private, loopback or reserved address (set network.allow_private = true to allow it)',
    };
  }
  return undefined;
}
