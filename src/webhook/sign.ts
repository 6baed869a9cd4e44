// Standard Webhooks v1 signatures: base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed with the secret's bytes.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The key bytes of a secret: base64 after the `whsec_` prefix (Standard Webhooks §Signature scheme). */
function secretBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** "v1,<base64>" for one secret. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The headers of one delivery attempt; several secrets (during rotation) give space-separated signatures. */
export function webhookHeaders(secrets: string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, id, timestampSeconds, body)).join(' '),
  };
}

/** True when any signature in the header verifies with `secret` (what a receiver does); constant-time compare. */
export function verifySignature(secret: string, id: string, timestampSeconds: number, body: string, header: string): boolean {
  const expected = Buffer.from(signature(secret, id, timestampSeconds, body));
  return header.split(' ').some((candidate) => {
    const got = Buffer.from(candidate);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
