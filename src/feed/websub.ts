// WebSub subscriber decisions, pure (W3C WebSub Recommendation): hub discovery, request forms, intent, signatures.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { discoverRelLink } from './discover.ts';

/** A topic's hub and self URL as advertised by one source (a Link header, a document); null where it says nothing. */
export type WebSubLinks = { hub: string | null; self: string | null };
/** A subscription request awaiting the hub's verification of intent (§5.3). */
export type PendingRequest = { mode: 'subscribe' | 'unsubscribe'; topic: string };
/** The query of a hub's GET to the callback: verification of intent (§5.3.1) or a denial (§5.2). */
export type HubQuery = {
  mode: string | undefined;
  topic: string | undefined;
  challenge: string | undefined;
  leaseSeconds: string | undefined;
  reason: string | undefined;
};
/** What to answer a hub's GET and what it changes. */
export type HubQueryDecision =
  | {
      kind: 'confirm';
      mode: 'subscribe' | 'unsubscribe';
      challenge: string;
      leaseSeconds: number | null;
    }
  | { kind: 'denied'; reason: string | null }
  | { kind: 'refuse' };
export type SignatureCheck = 'valid' | 'invalid' | 'missing';

/** §5.1.1: hub.secret MUST be less than 200 bytes; 32 random bytes in hex are 64. */
export const SECRET_BYTES = 32;
/** A lease is renewed once this share of it has passed: a fifth of it is left for a hub that answers late. */
const RENEW_AT = 0.8;
/** The algorithms §8 lists for X-Hub-Signature; a hub MUST use one of them. */
const SIGNATURE_METHODS: ReadonlySet<string> = new Set(['sha1', 'sha256', 'sha384', 'sha512']);
/** Link header field values read at most (a hostile origin could send megabytes of them). */
const MAX_LINK_CHARS = 16_384;

/** Hub and self from HTTP Link header values (RFC 8288), resolved against `base`; the first of each rel wins. */
export function linksFromHeader(value: string | null | undefined, base: string): WebSubLinks {
  const out: WebSubLinks = { hub: null, self: null };
  if (!value) return out;
  const re = /<([^>]*)>([^,<]*)/g;
  const text = value.slice(0, MAX_LINK_CHARS);
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const rels = relOf(m[2] ?? '');
    const url = resolveHttp(m[1] ?? '', base);
    if (url === null) continue;
    if (rels.includes('hub')) out.hub ??= url;
    if (rels.includes('self')) out.self ??= url;
  }
  return out;
}

/** Hub and self of an HTML page's <link> elements (§4: a topic that is an HTML document). */
export function linksFromHtml(html: string, pageUrl: string): WebSubLinks {
  return {
    hub: discoverRelLink(html, pageUrl, 'hub'),
    self: discoverRelLink(html, pageUrl, 'self'),
  };
}

/** §4: the Link headers are checked first, the document (atom:link in Atom and RSS, hubs in JSON Feed, <link> in
 *  HTML) only for what they lack. `linkHeader` is every Link value of the response that brought the document. */
export function advertisedLinks(
  linkHeader: string | null | undefined,
  fetchedUrl: string,
  document: WebSubLinks,
): WebSubLinks {
  const header = linksFromHeader(linkHeader, fetchedUrl);
  return { hub: header.hub ?? document.hub, self: header.self ?? document.self };
}

/** The hub to subscribe at and the topic (§4: the self URL, else the URL the content was fetched from); null when no
 *  hub is advertised: the feed is polled only. */
export function webSubTarget(
  links: WebSubLinks,
  fetchedUrl: string,
): { hub: string; topic: string } | null {
  return links.hub === null ? null : { hub: links.hub, topic: links.self ?? fetchedUrl };
}

/** The form-encoded body of a (un)subscription request (§5.1). The secret and lease go with a subscribe only. */
export function requestForm(r: {
  mode: 'subscribe' | 'unsubscribe';
  topic: string;
  callback: string;
  secret: string;
  leaseSeconds: number;
}): string {
  const form = new URLSearchParams({
    'hub.callback': r.callback,
    'hub.mode': r.mode,
    'hub.topic': r.topic,
  });
  if (r.mode === 'subscribe') {
    form.set('hub.lease_seconds', String(r.leaseSeconds));
    form.set('hub.secret', r.secret);
  }
  return form.toString();
}

/** The answer to a hub's GET (§5.3.1): confirm (2xx, echoing hub.challenge) only when the mode and topic match the
 *  request we are waiting on; a denial (§5.2, hub.mode=denied) of the pending subscribe is taken; anything else is
 *  refused (404), so no one can make us confirm a subscription we did not ask for. */
export function decideHubQuery(pending: PendingRequest | null, q: HubQuery): HubQueryDecision {
  if (pending === null || q.topic !== pending.topic) return { kind: 'refuse' };
  if (q.mode === 'denied')
    return pending.mode === 'subscribe'
      ? { kind: 'denied', reason: q.reason?.slice(0, 500) || null }
      : { kind: 'refuse' };
  if (q.mode !== pending.mode || !q.challenge) return { kind: 'refuse' };
  const lease =
    q.leaseSeconds !== undefined && /^\d{1,9}$/.test(q.leaseSeconds)
      ? Number(q.leaseSeconds)
      : null;
  // §5.3.1: hub.lease_seconds is REQUIRED on subscribe; a verification without one is not a subscription we know.
  if (pending.mode === 'subscribe' && (lease === null || lease <= 0)) return { kind: 'refuse' };
  return { kind: 'confirm', mode: pending.mode, challenge: q.challenge, leaseSeconds: lease };
}

/** §8: X-Hub-Signature is "method=signature", an HMAC of the exact body under the subscription's secret with sha1,
 *  sha256, sha384 or sha512. Missing, malformed, another method or a wrong digest: the content MUST be ignored. */
export function checkSignature(
  header: string | null | undefined,
  body: Uint8Array,
  secret: string,
): SignatureCheck {
  if (!header) return 'missing';
  const eq = header.indexOf('=');
  const method = header.slice(0, eq).trim().toLowerCase();
  const given = header
    .slice(eq + 1)
    .trim()
    .toLowerCase();
  if (eq < 0 || !SIGNATURE_METHODS.has(method) || !/^[0-9a-f]+$/.test(given)) return 'invalid';
  const expected = createHmac(method, secret).update(body).digest();
  const actual = Buffer.from(given, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected)
    ? 'valid'
    : 'invalid';
}

/** The unguessable part of a feed's callback URL: derived from its secret (which HMAC needs in clear anyway), so a
 *  renewal names the same callback and a new subscription (new secret) a new one, without storing a second secret. */
export function callbackToken(secret: string, feedId: string): string {
  return createHmac('sha256', secret)
    .update(`feedsub websub callback ${feedId}`)
    .digest('base64url');
}

/** Whether `given` is the feed's callback token, compared in constant time. */
export function tokenMatches(given: string, secret: string, feedId: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(callbackToken(secret, feedId));
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The callback URL a hub is given: `<public_url>/websub/<feed id>/<token>`. */
export function callbackUrl(publicUrl: string, feedId: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/websub/${feedId}/${token}`;
}

/** When to renew a lease granted at `verifiedAt`: after 80 % of it and at least a minute before it ends, but never
 *  before half of it (a hub granting a few seconds must not be asked again on every tick). */
export function renewalAt(verifiedAt: Date, leaseSeconds: number): Date {
  const s = Math.max(leaseSeconds / 2, Math.min(leaseSeconds * RENEW_AT, leaseSeconds - 60));
  return new Date(verifiedAt.getTime() + s * 1000);
}

/** Seconds before retrying a failed (un)subscription request: 1 min doubling to 6 h. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(21_600, 60 * 2 ** Math.min(20, Math.max(0, attempts - 1)));
}

function relOf(params: string): string[] {
  const m = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params);
  return (m?.[1] ?? m?.[2] ?? '').toLowerCase().split(/\s+/);
}

function resolveHttp(href: string, base: string): string | null {
  try {
    const u = new URL(href.trim(), base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}
