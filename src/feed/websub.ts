// WebSub subscriber decisions, pure (W3C WebSub Recommendation): hub discovery, request forms, intent, signatures.
import { createHmac, timingSafeEqual, type Hmac } from 'node:crypto';
import { discoverRelLink } from './fetch/discover.ts';

/** A topic's hub and self URL as advertised by one source (a Link header, a document); null where it says nothing. */
export type WebSubLinks = { hub: string | null; self: string | null };
/** What a hub's GET to a callback is checked against: the subscription's topic, the request awaiting verification of
 *  intent (§5.3) if it is this callback's, and the lease we asked for. */
export type CallbackState = {
  topic: string;
  pending: 'subscribe' | 'unsubscribe' | null;
  askedLeaseSeconds: number;
};
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

/** §5.1.1: hub.secret MUST be less than 200 bytes; 32 random bytes in hex are 64. */
export const SECRET_BYTES = 32;
/** Random bytes of a callback token (§5.1: an unguessable URL, [capability-urls]): 43 characters in base64url. */
export const CALLBACK_TOKEN_BYTES = 32;
/** A lease is renewed once this share of it has passed: a fifth of it is left for a hub that answers late. */
const RENEW_AT = 0.8;
/** The algorithms §7.1.1 lists for X-Hub-Signature; a hub MUST use one of them. */
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

/** §4: the HTTP Link headers are checked first, and the document (atom:link in Atom and RSS, hubs in JSON Feed, <link>
 *  in HTML) only in their absence: when the Link headers name a hub, they alone say the hub and the self URL, never
 *  mixed with the document's. `linkHeader` is every Link value of the response that brought the document. */
export function advertisedLinks(
  linkHeader: string | null | undefined,
  fetchedUrl: string,
  document: WebSubLinks,
): WebSubLinks {
  const header = linksFromHeader(linkHeader, fetchedUrl);
  return header.hub !== null ? header : document;
}

/** The hub to subscribe at and the topic (§4: the self URL, else the URL the content was fetched from); null when no
 *  hub is advertised: the feed is polled only. */
export function webSubTarget(
  links: WebSubLinks,
  fetchedUrl: string,
): { hub: string; topic: string } | null {
  return links.hub === null ? null : { hub: links.hub, topic: links.self ?? fetchedUrl };
}

/** The form-encoded body of a (un)subscription request (§5.1). The lease goes with a subscribe, and the secret with a
 *  subscribe when there is one (none for a plain-http hub: hubGetsSecret). */
export function requestForm(r: {
  mode: 'subscribe' | 'unsubscribe';
  topic: string;
  callback: string;
  secret: string | null;
  leaseSeconds: number;
}): string {
  const form = new URLSearchParams({
    'hub.callback': r.callback,
    'hub.mode': r.mode,
    'hub.topic': r.topic,
  });
  if (r.mode === 'subscribe') {
    form.set('hub.lease_seconds', String(r.leaseSeconds));
    if (r.secret !== null) form.set('hub.secret', r.secret);
  }
  return form.toString();
}

/** §5.1: hub.secret SHOULD only be sent over HTTPS. A plain-http hub gets none, so its pushes carry no signature and
 *  are taken only as a sign that the feed changed (the feed is polled). */
export function hubGetsSecret(hubUrl: string): boolean {
  return hubUrl.startsWith('https:');
}

/** The answer to a hub's GET (§5.3.1, §5.2). A denial naming the subscription's topic is taken at any time, even of a
 *  subscription verified earlier (§5.2: "at any point"). A verification is confirmed (2xx, echoing hub.challenge) only
 *  when its mode and topic match the request awaiting verification at this callback; anything else is refused (404),
 *  so no one can make us confirm a subscription we did not ask for. A granted lease longer than the one asked is
 *  taken as the one asked: the subscription is renewed on our schedule, not the hub's. */
export function decideHubQuery(state: CallbackState, q: HubQuery): HubQueryDecision {
  if (q.topic !== state.topic) return { kind: 'refuse' };
  if (q.mode === 'denied') return { kind: 'denied', reason: q.reason?.slice(0, 500) || null };
  if (state.pending === null || q.mode !== state.pending || !q.challenge) return { kind: 'refuse' };
  const granted =
    q.leaseSeconds !== undefined && /^\d{1,9}$/.test(q.leaseSeconds)
      ? Number(q.leaseSeconds)
      : null;
  // §5.3.1: hub.lease_seconds is REQUIRED on subscribe; a verification without one is not a subscription we know.
  if (state.pending === 'subscribe' && (granted === null || granted <= 0))
    return { kind: 'refuse' };
  const lease = granted === null ? null : Math.min(granted, state.askedLeaseSeconds);
  return { kind: 'confirm', mode: state.pending, challenge: q.challenge, leaseSeconds: lease };
}

/** §7.1: X-Hub-Signature is "method=signature", an HMAC of the exact body under the subscription's secret with sha1,
 *  sha256, sha384 or sha512, checked as the body streams in: update() with each chunk, valid() at its end. Missing,
 *  malformed or another method ('missing', 'invalid': the header alone says so, and the body need not be read) or a
 *  wrong digest: the content MUST be ignored (§7.1.2). */
export type SignatureVerifier = { update(chunk: Uint8Array): void; valid(): boolean };

/** The verifier of a body signed by `header` (§7.1) under `secret`; see SignatureVerifier. */
export function signatureVerifier(
  header: string | null | undefined,
  secret: string,
): SignatureVerifier | 'missing' | 'invalid' {
  if (!header) return 'missing';
  const eq = header.indexOf('=');
  const method = header.slice(0, eq).trim().toLowerCase();
  const given = header
    .slice(eq + 1)
    .trim()
    .toLowerCase();
  if (eq < 0 || !SIGNATURE_METHODS.has(method) || !/^[0-9a-f]+$/.test(given)) return 'invalid';
  const hmac: Hmac = createHmac(method, secret);
  return {
    update: (chunk) => void hmac.update(chunk),
    valid() {
      const expected = hmac.digest();
      const actual = Buffer.from(given, 'hex');
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
  };
}

/** Whether `given` is the callback token `stored`, compared in constant time. */
export function tokenMatches(given: string, stored: string | null): boolean {
  if (stored === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(stored);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The host a hub's share of request and push slots counts by: the host of the hub URL we subscribed at. */
export function hubHost(hubUrl: string): string {
  try {
    return new URL(hubUrl).host;
  } catch {
    return hubUrl;
  }
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

/** Seconds a hub that accepted our `attempts`-th request in a row (§5.1.2: 202) has to verify it (§5.3) before it is
 *  sent again: 10 min, doubling to 6 h, so a hub that accepts and never verifies is asked less and less often. */
export function verifyWaitSeconds(attempts: number): number {
  return Math.min(21_600, 600 * 2 ** Math.min(20, Math.max(0, attempts - 1)));
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
