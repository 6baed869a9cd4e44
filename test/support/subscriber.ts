// Test helpers for a running API: an application with one endpoint subscribing to feed URLs through the actions, and
// calls to a real server that fail the test on any error status.
import assert from 'node:assert/strict';
import { createEndpoint } from '../../src/actions/endpoints.ts';
import { createSubscription } from '../../src/actions/subscriptions.ts';
import type { World } from './world.ts';

export type Subscriber = {
  key: string;
  applicationId: string;
  endpoint: string;
  /** Subscribes the endpoint to `url`; returns the subscription's id and its feed's. */
  subscribe(url: string): Promise<{ id: string; feed: string }>;
};

/** A new application with a key and one endpoint (a URL nothing answers). */
export async function subscriber(w: World): Promise<Subscriber> {
  const { key, applicationId } = await w.key();
  const endpoint = (
    await createEndpoint(w.ctx, applicationId, {
      title: 'E',
      url: 'https://hooks.example.com/',
    })
  ).id;
  return {
    key,
    applicationId,
    endpoint,
    subscribe: (url) => createSubscription(w.ctx, applicationId, { endpoint, url }),
  };
}

/** Calls a running server's API with `key`; fails on a status of 300 or more, else resolves with the JSON body (null
 *  for 204). */
export function apiCaller(
  base: () => string,
  key: () => string,
): (method: string, path: string, body?: unknown) => Promise<any> {
  return async (method, path, body) => {
    const res = await fetch(base() + path, {
      method,
      headers: { authorization: key(), 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
    return res.status === 204 ? null : res.json();
  };
}
