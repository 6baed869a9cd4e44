// The Node HTTP server around the Hono app: what node:http answers by itself (a request it cannot parse, headers over
// its limit) as problem+json, and a request body left unread that never kills a keep-alive connection silently.
import { getRequestListener } from '@hono/node-server';
import type { MiddlewareHandler } from 'hono';
import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log.ts';

/** An unread rest of a request body of at most this many bytes (by its Content-Length) is read and dropped after the
 *  response, so the connection serves the next request; a larger rest, or one of unknown length (chunked), gets
 *  `Connection: close` on the response instead: announced, never a silent hang-up. */
export const DRAIN_MAX_BYTES = 1024 * 1024;
/** How long that rest may take to arrive; a client still sending after it loses the connection. */
const DRAIN_TIMEOUT_MS = 10_000;

/** Serves `fetch` on hostname:port; resolves once listening. */
export function listenHttp(
  fetch: (req: Request, env: object) => Response | Promise<Response>,
  opts: { hostname: string; port: number; logger: Logger },
): Promise<Server> {
  return new Promise((resolve, reject) => {
    // autoCleanupIncoming off: the adapter's own drain gives up after 500 ms and, when the body was opened as a web
    // stream, stalls on its back-pressure; drainRest below replaces it.
    const listener = getRequestListener(fetch, { autoCleanupIncoming: false });
    const server = createServer((req, res) => {
      res.once('finish', () => drainRest(req, res));
      return listener(req, res);
    });
    server.on('clientError', (err: Error, socket: Duplex) =>
      answerClientError(err, socket, opts.logger),
    );
    server.once('error', reject);
    server.listen(opts.port, opts.hostname, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** Hono middleware, outermost: a response sent while the request body is still arriving says `Connection: close`
 *  unless drainRest will read the rest (a known length up to DRAIN_MAX_BYTES). Outside node:http (app.request in
 *  tests) there is no connection to keep, and nothing to do. */
export function closeOnUnreadBody(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
    if (incoming instanceof IncomingMessage && !incoming.complete && !drainable(incoming))
      c.header('connection', 'close');
  };
}

function drainable(req: IncomingMessage): boolean {
  const length = Number(req.headers['content-length']);
  return (
    req.headers['transfer-encoding'] === undefined &&
    Number.isSafeInteger(length) &&
    length <= DRAIN_MAX_BYTES
  );
}

// After the response: read and drop what is left of the body, within DRAIN_MAX_BYTES and DRAIN_TIMEOUT_MS, so the
// parser reaches the next request on the connection. A response that said Connection: close ends the connection anyway.
function drainRest(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || req.destroyed || /close/i.test(String(res.getHeader('connection') ?? '')))
    return;
  let bytes = 0;
  const giveUp = () => req.socket.destroy();
  const timer = setTimeout(giveUp, DRAIN_TIMEOUT_MS);
  timer.unref();
  const done = () => clearTimeout(timer);
  // A body opened as a web stream has that stream's listener, which pauses the request on back-pressure nobody will
  // relieve; node:http's own drain (IncomingMessage._dump) removes the 'data' listeners the same way.
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_MAX_BYTES) {
      done();
      giveUp();
    }
  });
  req.once('end', done);
  req.once('close', done);
  req.resume();
}

// node:http's answers to a request it cannot take (RFC 9110 §15.5; RFC 6585 §5 for 431), keyed by its error code.
const CLIENT_ERRORS: Record<string, { status: number; title: string; detail: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    title: 'Request header fields too large',
    detail: 'The request headers exceed the 16 KiB the server accepts.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    title: 'Request timeout',
    detail: 'The request was not received in time.',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    title: 'Payload too large',
    detail: 'The chunk extensions of the request body are too large.',
  },
};

/** node:http's 'clientError': the same refusal it would send, as problem+json with a request id, then the connection
 *  is closed (the parser cannot find the next request). Anyone can cause these, so they log at debug. */
function answerClientError(err: Error, socket: Duplex, logger: Logger): void {
  const code = (err as { code?: unknown }).code;
  const known = typeof code === 'string' ? CLIENT_ERRORS[code] : undefined;
  const { status, title, detail } = known ?? {
    status: 400,
    title: 'Bad request',
    detail: `The request is not valid HTTP/1.1 (${typeof code === 'string' ? code : 'unparsable'}).`,
  };
  const requestId = randomUUID();
  logger.debug('http: client error', { code, status, request_id: requestId });
  // A response already under way on this connection (a pipelined request failed behind it) cannot be followed by
  // another: only the close is left.
  const busy = '_httpMessage' in socket && Boolean(socket._httpMessage);
  if (code === 'ECONNRESET' || !socket.writable || busy) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ type: 'about:blank', title, status, detail });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
