// Standard Webhooks v1 signatures: base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed with the secret's bytes.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** What signing needs of an endpoint: its secret and, during a rotation, the previous one and when it stops. */
export type EndpointSecrets = {
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
};

/** The key bytes of a secret: base64 after the `whsec_` prefix (Standard Webhooks §Signature scheme). */
function secretBytes(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret,
    'base64',
  );
}

/** "v1,<base64>" for one secret. */
export function signature(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  const mac = createHmac('sha256', secretBytes(secret))
    .update(`${id}.${timestampSeconds}.`)
    .update(body)
    .digest('base64');
  return `v1,${mac}`;
}

/** The secrets to sign with at `now`: the current one, then the previous one while a rotation's grace period lasts. */
export function signingSecrets(endpoint: EndpointSecrets, now: Date): string[] {
  const previous = endpoint.previous_secret;
  const live =
    previous !== null &&
    endpoint.previous_secret_until !== null &&
    endpoint.previous_secret_until > now.toISOString();
  return live ? [endpoint.secret, previous] : [endpoint.secret];
}

/** The headers of one delivery attempt; several secrets (during rotation) give space-separated signatures. `extra` (the
 *  endpoint's own headers) come first: they never name a header set here (the endpoint's validation refuses them). */
export function webhookHeaders(
  secrets: string[],
  id: string,
  timestampSeconds: number,
  body: string,
  extra: Readonly<Record<string, string>> | null = null,
): Record<string, string> {
  return {
    ...extra,
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' '),
  };
}

/** True when any signature in the header verifies with `secret` (what a receiver does); constant-time compare. */
export function verifySignature(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
  header: string,
): boolean {
  const expected = Buffer.from(signature(secret, id, timestampSeconds, body));
  return header.split(' ').some((candidate) => {
    const got = Buffer.from(candidate);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
