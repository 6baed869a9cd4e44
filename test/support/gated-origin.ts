// A feed origin on 127.0.0.1 whose answer to a path can be held back, to act while a poll's fetch is in flight.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type GatedOrigin = {
  url: string;
  /** Serves `body` (RSS) at `path`. */
  set(path: string, body: string): void;
  /** Holds the next request for `path`: `arrived` resolves once it is waiting; `release()` answers it. */
  hold(path: string): { arrived: Promise<void>; release: () => void };
  close(): Promise<void>;
};

/** Starts a gated origin with a free port. */
export async function startGatedOrigin(): Promise<GatedOrigin> {
  const bodies = new Map<string, string>();
  const gates = new Map<string, { arrived: () => void; wait: Promise<void> }>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    const send = () => {
      const body = bodies.get(path);
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': 'application/rss+xml' }).end(body);
    };
    const gate = gates.get(path);
    if (!gate) return send();
    gates.delete(path);
    gate.arrived();
    void gate.wait.then(send);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (path, body) => void bodies.set(path, body),
    hold(path) {
      let release!: () => void;
      let arrived!: () => void;
      const wait = new Promise<void>((r) => (release = r));
      const arrival = new Promise<void>((r) => (arrived = r));
      gates.set(path, { arrived, wait });
      return { arrived: arrival, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
