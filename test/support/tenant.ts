// The daemon in this process for tests through its HTTP API: a config on a data directory of its own, and an
// application with a key and an endpoint that subscribes to feeds.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey } from '../../src/actions/keys.ts';
import type { RunningApp } from '../../src/app.ts';
import { defaultConfig, withConfig, type Config } from '../../src/config.ts';

/** A config for startApp: a new data directory (added to `dirs`, for the caller to remove), any free port, loopback
 *  origins allowed, and `patch` over that. */
export function appConfig(dirs: string[], patch: Parameters<typeof withConfig>[1] = {}): Config {
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-pool-'));
  dirs.push(dir);
  return withConfig(
    withConfig(defaultConfig(), {
      storage: { data_dir: dir },
      server: { port: 0 },
      network: { allow_private: true },
    }),
    patch,
  );
}

/** An application with a key, an endpoint, and a way to subscribe it to feed URLs through the API. */
export async function tenant(app: RunningApp, name: string, hook: string) {
  const key = (await createKey(app.ctx, name, null)).key;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(app.url + path, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()) as { id: string; feed?: string };
  };
  const endpoint = await post('/v1/endpoints', { title: name, url: hook });
  return {
    subscribe: (url: string, to = endpoint.id) => post('/v1/subscriptions', { endpoint: to, url }),
    /** Another endpoint of this application: its id. */
    endpoint: async (url: string) => (await post('/v1/endpoints', { title: name, url })).id,
    get: async (path: string) =>
      (await (await fetch(app.url + path, { headers: { authorization: key } })).json()) as Record<
        string,
        unknown
      >,
  };
}
