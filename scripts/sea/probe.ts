// Helpers to run the built executable as a server: a free port, a bounded wait for /healthz, a clean stop.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/** Returns a TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string')
    throw new Error('probe: unable to read the listening port');
  return address.port;
}

/**
 * Polls `url` every `intervalMs` until it answers 200 and returns the milliseconds waited; throws when `child` exits
 * first or `timeoutMs` passes (the loop is bounded by both).
 */
export async function waitForHealthy(
  url: string,
  child: ChildProcess,
  timeoutMs = 30_000,
  intervalMs = 5,
): Promise<number> {
  const started = performance.now();
  const deadline = started + timeoutMs;
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `probe: the server exited (${child.exitCode ?? child.signalCode}) before ${url} answered 200`,
      );
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return performance.now() - started;
    } catch {
      // Not listening yet: try again after the interval.
    }
    await delay(intervalMs);
  }
  throw new Error(`probe: ${url} did not answer 200 within ${timeoutMs} ms`);
}

/** Sends `signal` (default SIGTERM) and resolves with the exit code; kills with SIGKILL after `timeoutMs`. */
export async function stopChild(
  child: ChildProcess,
  signal: NodeJS.Signals = 'SIGTERM',
  timeoutMs = 15_000,
): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const [code] = await exited;
    return code;
  } finally {
    clearTimeout(timer);
  }
}
