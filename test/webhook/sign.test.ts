// Standard Webhooks signing: the spec's test vector, rotation's two signatures, and which secrets sign when.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  signature,
  signingSecrets,
  verifySignature,
  webhookHeaders,
} from '../../src/webhook/sign.ts';

const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('webhook signatures', () => {
  it('matches the Standard Webhooks test vector', () => {
    assert.equal(
      signature(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body),
      VECTOR.signature,
    );
    assert.ok(
      verifySignature(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body, VECTOR.signature),
    );
  });

  const tampered: [string, Partial<typeof VECTOR>][] = [
    ['the body changes by one byte', { body: '{"test": 2432232315}' }],
    ['the timestamp differs', { timestamp: VECTOR.timestamp + 1 }],
    ['the id differs', { id: 'msg_other' }],
    ['the secret differs', { secret: 'whsec_' + Buffer.alloc(24, 1).toString('base64') }],
  ];
  for (const [name, change] of tampered) {
    it(`refuses the signature when ${name}`, () => {
      const v = { ...VECTOR, ...change };
      assert.equal(verifySignature(v.secret, v.id, v.timestamp, v.body, VECTOR.signature), false);
    });
  }

  it('puts one space-separated signature per secret in the headers, and each verifies alone', () => {
    const other = 'whsec_' + Buffer.alloc(24, 7).toString('base64');
    const h = webhookHeaders([VECTOR.secret, other], VECTOR.id, VECTOR.timestamp, VECTOR.body);
    assert.deepEqual(Object.keys(h).sort(), [
      'content-type',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
    ]);
    assert.equal(h['webhook-id'], VECTOR.id);
    assert.equal(h['webhook-timestamp'], '1614265330');
    const parts = h['webhook-signature']!.split(' ');
    assert.equal(parts[0], VECTOR.signature);
    assert.ok(verifySignature(other, VECTOR.id, VECTOR.timestamp, VECTOR.body, parts[1]!));
    assert.ok(
      verifySignature(
        VECTOR.secret,
        VECTOR.id,
        VECTOR.timestamp,
        VECTOR.body,
        h['webhook-signature']!,
      ),
    );
    assert.ok(
      verifySignature(other, VECTOR.id, VECTOR.timestamp, VECTOR.body, h['webhook-signature']!),
    );
  });

  const now = new Date('2026-01-01T12:00:00.000Z');
  const cases: [
    string,
    { previous_secret: string | null; previous_secret_until: string | null },
    string[],
  ][] = [
    [
      'no rotation: the current secret only',
      { previous_secret: null, previous_secret_until: null },
      ['new'],
    ],
    [
      'during the grace period: current, then previous',
      { previous_secret: 'old', previous_secret_until: '2026-01-02T00:00:00.000Z' },
      ['new', 'old'],
    ],
    [
      'when the grace period has just ended: current only',
      { previous_secret: 'old', previous_secret_until: now.toISOString() },
      ['new'],
    ],
    [
      'after the grace period: current only',
      { previous_secret: 'old', previous_secret_until: '2026-01-01T00:00:00.000Z' },
      ['new'],
    ],
  ];
  for (const [name, endpoint, expected] of cases) {
    it(`signs with ${name}`, () => {
      assert.deepEqual(signingSecrets({ secret: 'new', ...endpoint }, now), expected);
    });
  }
});
