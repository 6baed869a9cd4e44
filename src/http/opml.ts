// Sending an OPML document as a download, streamed from chunks made on demand so a long list is never held whole.
import type { Context } from 'hono';

const HEADERS = {
  // text/x-opml is what feed readers send and expect (OPML has no registered media type).
  'content-type': 'text/x-opml; charset=utf-8',
  'content-disposition': 'attachment; filename="feedsub-subscriptions.opml"',
};

/** A 200 OPML download whose body is `chunks`, each taken from the iterator only when the client has read the
 *  previous ones (a ReadableStream's pull): memory holds a chunk at a time however long the document, and a client
 *  that goes away stops the iteration. Whatever can refuse the request must be checked before: once this returns,
 *  the status is sent. */
export function sendOpml(c: Context, chunks: AsyncIterable<string>): Response {
  const it = chunks[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await it.return?.();
    },
  });
  return c.body(body, 200, HEADERS);
}
