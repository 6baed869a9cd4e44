// The backfill rows' clients, in a process of their own: each creates a subscription asking for a backfill and deletes
// it, again and again. With `nice`, the process runs at the lowest CPU priority: an attacker's clients run on its own
// machines, but on the bench's machine clients looping flat out take a core the daemon would otherwise have, and the
// row would measure the machine's scheduler instead of the daemon. At nice 19 they still send as fast as the daemon
// answers whenever a core is free.
//
// `node --import tsx attack.ts '<json Attack>'`: prints "ready", starts on a line on stdin, and prints one JSON line
// {"creates": [ms…], "refused": n} when done.
import { setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';

export type Attack = {
  url: string;
  key: string;
  /** One client per endpoint, all at once. */
  endpoints: string[];
  feed: string;
  backfill: number;
  /** Cycles per client at most, and for how long at most. */
  cycles: number;
  ms: number;
  /** A 429 (a quota) is counted and the client goes on at once, as a hostile client would; without it a 429 fails. */
  countRefusals: boolean;
  /** At nice 19. */
  nice: boolean;
};

const attack = JSON.parse(process.argv[2]!) as Attack;
if (attack.nice) setPriority(19);
const agent = new Agent({ connections: attack.endpoints.length });

async function call(method: 'POST' | 'DELETE', path: string, body?: unknown) {
  const r = await request(attack.url + path, {
    method,
    dispatcher: agent,
    headers: { authorization: `Bearer ${attack.key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
  });
  const text = await r.body.text();
  return { status: r.statusCode, body: text ? (JSON.parse(text) as { id?: string }) : {} };
}

console.log('ready');
const go = createInterface({ input: process.stdin });
await new Promise((resolve) => go.once('line', resolve));
go.close();
process.stdin.destroy();
const creates: number[] = [];
let refused = 0;
const end = performance.now() + attack.ms;
await Promise.all(
  attack.endpoints.map(async (endpoint) => {
    for (let i = 0; i < attack.cycles && performance.now() < end; i++) {
      const t0 = performance.now();
      const created = await call('POST', '/v1/subscriptions', {
        endpoint,
        url: attack.feed,
        backfill: attack.backfill,
      });
      creates.push(performance.now() - t0);
      if (created.status === 429 && attack.countRefusals) {
        refused++;
        continue;
      }
      if (created.status !== 201)
        throw new Error(
          `bench: a create answered ${created.status}: ${JSON.stringify(created.body)}`,
        );
      const deleted = await call('DELETE', `/v1/subscriptions/${created.body.id}`);
      if (deleted.status !== 204) throw new Error(`bench: DELETE answered ${deleted.status}`);
    }
  }),
);
await agent.close();
console.log(JSON.stringify({ creates, refused }));
