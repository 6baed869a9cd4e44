// A WebSub hub on 127.0.0.1, written from the W3C WebSub Recommendation's hub role (not from any hub's code): takes
// (un)subscription requests (§5.1), verifies intent at the callback (§5.3) or denies (§5.2), and distributes content
// (§7) signed with the subscriber's secret (§8). Knobs: refuse requests, deny, grant another lease, sign badly.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type HubSubscription = {
  callback: string;
  topic: string;
  secret: string | null;
  leaseSeconds: number;
  verifiedAt: number;
};
export type HubRequest = { mode: string; callback: string; topic: string; form: URLSearchParams };
export type Verification = { mode: string; callback: string; status: number; echoed: boolean };
export type Hub = {
  url: string;
  /** Verified subscriptions by callback (§5.3: a subscription is active once its intent is verified). */
  subscriptions: Map<string, HubSubscription>;
  requests: HubRequest[];
  verifications: Verification[];
  /** How the next requests are answered: accept (202 then verify), deny (202 then hub.mode=denied), or a status. */
  mode: 'accept' | 'deny' | number;
  /** The lease the hub grants (§5.3.1 hub.lease_seconds), whatever was asked; null: what was asked, else 864000. */
  grantSeconds: number | null;
  /** Distributes `body` to every verified subscriber of `topic` (§7), signed with `algorithm` (§8), or with a wrong
   *  key when `forge`; resolves with each callback's status. */
  publish(
    topic: string,
    body: string,
    opts?: { contentType?: string; algorithm?: string; forge?: boolean; unsigned?: boolean },
  ): Promise<number[]>;
  close(): Promise<void>;
};

/** Starts the hub on a free port. */
export async function startHub(): Promise<Hub> {
  const hub: Hub = {
    url: '',
    subscriptions: new Map(),
    requests: [],
    verifications: [],
    mode: 'accept',
    grantSeconds: null,
    publish: (topic, body, opts = {}) => publish(hub, topic, body, opts),
    close: () => close(server),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const r: HubRequest = {
        mode: form.get('hub.mode') ?? '',
        callback: form.get('hub.callback') ?? '',
        topic: form.get('hub.topic') ?? '',
        form,
      };
      hub.requests.push(r);
      // §5.1.2: a hub that accepts the request answers 202 and verifies asynchronously.
      const valid = ['subscribe', 'unsubscribe'].includes(r.mode) && r.callback && r.topic;
      if (typeof hub.mode === 'number' || !valid) {
        res.writeHead(typeof hub.mode === 'number' ? hub.mode : 400).end('refused');
        return;
      }
      res.writeHead(202).end();
      const denied = hub.mode === 'deny' && r.mode === 'subscribe';
      setImmediate(() => void (denied ? deny(r) : verify(hub, r)));
    });
  });
  hub.url = await new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`),
    ),
  );
  return hub;
}

/** §5.3: GET the callback with the mode, topic, a challenge and (subscribe) the lease; the subscriber agrees only by a
 *  2xx whose body is the challenge. */
async function verify(hub: Hub, r: HubRequest): Promise<void> {
  const challenge = randomBytes(12).toString('hex');
  const asked = Number(r.form.get('hub.lease_seconds') ?? NaN);
  const lease = hub.grantSeconds ?? (Number.isFinite(asked) ? asked : 864_000);
  const url = new URL(r.callback);
  url.searchParams.set('hub.mode', r.mode);
  url.searchParams.set('hub.topic', r.topic);
  url.searchParams.set('hub.challenge', challenge);
  if (r.mode === 'subscribe') url.searchParams.set('hub.lease_seconds', String(lease));
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    const echoed = res.ok && (await res.text()) === challenge;
    hub.verifications.push({ mode: r.mode, callback: r.callback, status: res.status, echoed });
    if (!echoed) return;
    if (r.mode === 'unsubscribe') hub.subscriptions.delete(r.callback);
    else
      hub.subscriptions.set(r.callback, {
        callback: r.callback,
        topic: r.topic,
        secret: r.form.get('hub.secret'),
        leaseSeconds: lease,
        verifiedAt: Date.now(),
      });
  } catch {
    hub.verifications.push({ mode: r.mode, callback: r.callback, status: 0, echoed: false });
  }
}

/** §5.2: the hub denies the subscription by a GET with hub.mode=denied, the topic and a reason. */
async function deny(r: HubRequest): Promise<void> {
  const url = new URL(r.callback);
  url.searchParams.set('hub.mode', 'denied');
  url.searchParams.set('hub.topic', r.topic);
  url.searchParams.set('hub.reason', 'not on the list');
  await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
}

/** §7: POST the content to each subscriber of the topic; §8: X-Hub-Signature: method=HMAC(secret, body). */
async function publish(
  hub: Hub,
  topic: string,
  body: string,
  opts: { contentType?: string; algorithm?: string; forge?: boolean; unsigned?: boolean },
): Promise<number[]> {
  const subscribers = [...hub.subscriptions.values()].filter((s) => s.topic === topic);
  return Promise.all(
    subscribers.map(async (s) => {
      const headers: Record<string, string> = {
        'content-type': opts.contentType ?? 'application/atom+xml',
      };
      const algorithm = opts.algorithm ?? 'sha256';
      if (s.secret !== null && !opts.unsigned) {
        const key = opts.forge ? 'not the secret' : s.secret;
        headers['x-hub-signature'] =
          `${algorithm}=${createHmac(algorithm, key).update(body).digest('hex')}`;
      }
      const res = await fetch(s.callback, { method: 'POST', headers, body });
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
