// A WebSub hub on 127.0.0.1, written from the W3C WebSub Recommendation's hub role (not from any hub's code): takes
// (un)subscription requests (§5.1), verifies intent at the callback (§5.3) or denies (§5.2, also later), and
// distributes content (§7) signed with the subscriber's secret (§7.1); a callback that answers 410 is dropped (§7).
// Knobs: refuse requests, accept and never verify, deny, grant another lease, sign badly. Over TLS with the test
// certificate (test/fixtures/tls): a subscriber sends hub.secret only to an https hub, and trusts that certificate
// when NODE_EXTRA_CA_CERTS names it (npm test sets it; tests that start feedsub pass it on).
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export type HubSubscription = {
  callback: string;
  topic: string;
  secret: string | null;
  leaseSeconds: number;
  verifiedAt: number;
};
export type HubRequest = {
  mode: string;
  callback: string;
  topic: string;
  form: URLSearchParams;
  /** performance.now() when it arrived. */
  at: number;
};
export type Verification = {
  mode: string;
  callback: string;
  status: number;
  echoed: boolean;
  headers: Record<string, string>;
  at: number;
};
export type Hub = {
  url: string;
  /** Verified subscriptions by callback (§5.3: a subscription is active once its intent is verified). */
  subscriptions: Map<string, HubSubscription>;
  requests: HubRequest[];
  verifications: Verification[];
  /** How the next requests are answered: accept (202 then verify), silent (202, never verified), deny (202 then
   *  hub.mode=denied), hang (never answered, until close), or a status. */
  mode: 'accept' | 'silent' | 'deny' | 'hang' | number;
  /** How the next requests are answered, in turn, before `mode` takes over (a subscription verified, then its
   *  renewal refused…). */
  modes: Hub['mode'][];
  /** The lease the hub grants (§5.3.1 hub.lease_seconds), whatever was asked; null: what was asked, else 864000. */
  grantSeconds: number | null;
  /** Callbacks that answered a distribution 410 Gone, which the hub dropped (§7). */
  gone: string[];
  /** Denies a verified subscription (§5.2: at any time); resolves with the callback's status. */
  denyLater(callback: string): Promise<number>;
  /** Distributes `body` to every verified subscriber of `topic` (§7), signed with `algorithm` (§7.1), or with a wrong
   *  key when `forge`; resolves with each callback's status. */
  publish(
    topic: string,
    body: string,
    opts?: { contentType?: string; algorithm?: string; forge?: boolean; unsigned?: boolean },
  ): Promise<number[]>;
  close(): Promise<void>;
};

/** The test certificate, which NODE_EXTRA_CA_CERTS must name for a subscriber to trust the https hub. */
export const TEST_CA = new URL('../fixtures/tls/cert.pem', import.meta.url).pathname;

/** Starts the hub on a free port: over https with the test certificate unless `tls` is false. */
export async function startHub(opts: { tls?: boolean } = {}): Promise<Hub> {
  const tls = opts.tls ?? true;
  if (tls && resolve(process.env.NODE_EXTRA_CA_CERTS ?? '') !== TEST_CA)
    throw new Error(`websub-hub: run with NODE_EXTRA_CA_CERTS=${TEST_CA} (npm test sets it)`);
  const hub: Hub = {
    url: '',
    subscriptions: new Map(),
    requests: [],
    verifications: [],
    mode: 'accept',
    modes: [],
    grantSeconds: null,
    gone: [],
    denyLater: (callback) => denyLater(hub, callback),
    publish: (topic, body, opts = {}) => publish(hub, topic, body, opts),
    close: () => close(server),
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const r: HubRequest = {
        mode: form.get('hub.mode') ?? '',
        callback: form.get('hub.callback') ?? '',
        topic: form.get('hub.topic') ?? '',
        form,
        at: performance.now(),
      };
      hub.requests.push(r);
      const mode = hub.modes.shift() ?? hub.mode;
      if (mode === 'hang') return;
      // §5.1.2: a hub that accepts the request answers 202 and verifies asynchronously.
      const valid = ['subscribe', 'unsubscribe'].includes(r.mode) && r.callback && r.topic;
      if (typeof mode === 'number' || !valid) {
        res.writeHead(typeof mode === 'number' ? mode : 400).end('refused');
        return;
      }
      res.writeHead(202).end();
      if (mode === 'silent') return;
      const denied = mode === 'deny' && r.mode === 'subscribe';
      setImmediate(() => void (denied ? deny(r) : verify(hub, r)));
    });
  };
  const fixture = (name: string) =>
    readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
  const server: Server = tls
    ? createHttpsServer({ key: fixture('key.pem'), cert: fixture('cert.pem') }, handle)
    : createHttpServer(handle);
  hub.url = await new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}/`),
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
    hub.verifications.push({
      mode: r.mode,
      callback: r.callback,
      status: res.status,
      echoed,
      headers: Object.fromEntries(res.headers),
      at: performance.now(),
    });
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
    hub.verifications.push({
      mode: r.mode,
      callback: r.callback,
      status: 0,
      echoed: false,
      headers: {},
      at: performance.now(),
    });
  }
}

/** §5.2: the hub denies the subscription by a GET with hub.mode=denied, the topic and a reason; resolves with the
 *  callback's status (0 when unreachable). */
async function deny(r: { callback: string; topic: string }): Promise<number> {
  const url = new URL(r.callback);
  url.searchParams.set('hub.mode', 'denied');
  url.searchParams.set('hub.topic', r.topic);
  url.searchParams.set('hub.reason', 'not on the list');
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  await res?.arrayBuffer();
  return res?.status ?? 0;
}

/** §5.2: "The subscription MAY be denied by the hub at any point (even if it was previously accepted)". */
async function denyLater(hub: Hub, callback: string): Promise<number> {
  const s = hub.subscriptions.get(callback);
  if (s === undefined) throw new Error(`websub-hub: no verified subscription at ${callback}`);
  hub.subscriptions.delete(callback);
  return deny(s);
}

/** §7: POST the content to each subscriber of the topic; §7.1: X-Hub-Signature: method=HMAC(secret, body). */
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
      // §7: 410 means the subscription was deleted; the hub ends it.
      if (res.status === 410) {
        hub.subscriptions.delete(s.callback);
        hub.gone.push(s.callback);
      }
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

/** What a hostile hub does with a callback it knows: a POST whose body is `size` bytes of `chunk` repeated, sent
 *  `chunkBytes` at a time every `dripMs` (0: as fast as the socket takes it), the last chunk held back `holdLastMs`,
 *  with `declared` as its Content-Length (undefined: chunked), signed under `secret` when given. Resolves with the
 *  status (0 when the callback hung up first, or `signal` ended it first) and when it came (performance.now()). */
export function pushRaw(
  callback: string,
  opts: {
    size: number;
    chunkBytes?: number;
    dripMs?: number;
    holdLastMs?: number;
    declared?: number;
    secret?: string;
    signature?: string;
    signal?: AbortSignal;
  },
): Promise<{ status: number; at: number }> {
  const chunkBytes = opts.chunkBytes ?? 64 * 1024;
  const headers: Record<string, string> = { 'content-type': 'application/atom+xml' };
  if (opts.declared !== undefined) headers['content-length'] = String(opts.declared);
  if (opts.signature !== undefined) headers['x-hub-signature'] = opts.signature;
  else if (opts.secret !== undefined) {
    const hmac = createHmac('sha256', opts.secret);
    for (let sent = 0; sent < opts.size; sent += chunkBytes)
      hmac.update(Buffer.alloc(Math.min(chunkBytes, opts.size - sent), 0x61));
    headers['x-hub-signature'] = `sha256=${hmac.digest('hex')}`;
  }
  return new Promise((resolve) => {
    const req = httpRequest(callback, { method: 'POST', headers });
    let timer: NodeJS.Timeout | undefined;
    let answered = false;
    const done = (status: number) => {
      answered = true;
      clearTimeout(timer);
      resolve({ status, at: performance.now() });
    };
    // `signal` ends the request whenever it comes, answered or not (a body may still be unsent).
    const abort = () => req.destroy();
    if (opts.signal?.aborted) abort();
    opts.signal?.addEventListener('abort', abort, { once: true });
    req.once('close', () => opts.signal?.removeEventListener('abort', abort));
    req.on('response', (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.on('error', () => done(0));
    let sent = 0;
    let held = false;
    const next = (): void => {
      if (req.destroyed) return;
      if (sent >= opts.size) {
        req.end();
        return;
      }
      const n = Math.min(chunkBytes, opts.size - sent);
      if (opts.holdLastMs && !held && sent + n >= opts.size) {
        held = true;
        timer = setTimeout(next, opts.holdLastMs);
        return;
      }
      sent += n;
      const ok = req.write(Buffer.alloc(n, 0x61));
      // A dripped chunk is written from the check phase, after the poll phase has read an answer that came meanwhile: a
      // callback that answered and hung up is seen answering, not as a write that failed.
      if (opts.dripMs)
        timer = setTimeout(() => setImmediate(() => answered || next()), opts.dripMs);
      else if (ok) setImmediate(next);
      else req.once('drain', next);
    };
    next();
  });
}
