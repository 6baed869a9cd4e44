// Worker-thread side of the parse pool: answers parse requests posted by src/feed/parse-pool.ts.
import { parentPort } from 'node:worker_threads';
import { FeedParseError, parseFeed } from './parse.ts';
import type { ParsedFeed, ParseOptions } from './types.ts';

export type ParseRequest = { id: number; text: string; opts: ParseOptions };
export type ParseReply =
  | { type: 'ready' }
  | { type: 'result'; id: number; feed: ParsedFeed }
  | { type: 'error'; id: number; parseError: boolean; message: string };

/** Serves parse requests on this worker's parentPort (posting 'ready' first); does nothing on the
 *  main thread. A bundled build calls it from its own worker entry. */
export function runParseWorker(): void {
  const port = parentPort;
  if (!port) return;
  port.on('message', (req: ParseRequest) => port.postMessage(answer(req)));
  port.postMessage({ type: 'ready' } satisfies ParseReply);
}

/** Parses one request; never throws (errors become an 'error' reply). */
export function answer(req: ParseRequest): ParseReply {
  try {
    return { type: 'result', id: req.id, feed: parseFeed(req.text, req.opts) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { type: 'error', id: req.id, parseError: err instanceof FeedParseError, message };
  }
}
