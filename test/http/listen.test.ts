// The Node HTTP server, over real sockets: what node:http refuses by itself is problem+json, a request body left unread
// never kills a keep-alive connection silently, and a client that hangs up mid-upload is not an error.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { listenHttp } from '../../src/http/listen.ts';
import { createHttpApp } from '../../src/http/server.ts';
import { until, within } from '../support/deadline.ts';
import { recordingLogger } from '../support/log.ts';
import { makeWorld, type World } from '../support/world.ts';

type Answer = { status: number; headers: Record<string, string>; body: string };

/** Writes `chunks` on one new connection and reads responses until `count` are complete or the server closes it. */
function exchange(
  port: number,
  chunks: (string | Buffer)[],
  count: number,
): Promise<{ answers: Answer[]; closed: boolean; socket: Socket }> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {}); // a reset after the server closed is what some cases expect
  let buffer = Buffer.alloc(0);
  const answers: Answer[] = [];
  return within(
    new Promise<{ answers: Answer[]; closed: boolean; socket: Socket }>((resolve) => {
      const finish = (closed: boolean) => resolve({ answers, closed, socket });
      socket.on('data', (data: Buffer) => {
        buffer = Buffer.concat([buffer, data]);
        for (;;) {
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) break;
          const [line, ...fields] = buffer.subarray(0, end).toString('latin1').split('\r\n');
          const headers = Object.fromEntries(
            fields.map((f) => [
              f.slice(0, f.indexOf(':')).toLowerCase(),
              f.slice(f.indexOf(':') + 1).trim(),
            ]),
          );
          const length = Number(headers['content-length'] ?? 0);
          if (buffer.length < end + 4 + length) break;
          const body = buffer.subarray(end + 4, end + 4 + length).toString();
          buffer = buffer.subarray(end + 4 + length);
          answers.push({ status: Number(line!.split(' ')[1]), headers, body });
        }
        if (answers.length >= count) finish(false);
      });
      socket.on('close', () => finish(true));
      socket.on('connect', () => {
        for (const chunk of chunks) socket.write(chunk);
      });
    }),
    5_000,
    'the answers',
  ).finally(() => socket.destroy());
}

describe('the HTTP server', () => {
  let w: World;
  let key: string;
  let server: Server;
  let port: number;
  const { logger, lines } = recordingLogger();
  before(async () => {
    w = makeWorld({ server: { max_body_bytes: 4096 } });
    key = (await w.key()).key;
    const app = createHttpApp(w.ctx, logger);
    server = await listenHttp(app.fetch, { hostname: '127.0.0.1', port: 0, logger });
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await w.close();
  });

  const post = (body: string | number, contentType = 'application/json') => {
    const length = typeof body === 'number' ? body : Buffer.byteLength(body);
    return (
      `POST /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${key}\r\n` +
      `Content-Type: ${contentType}\r\nContent-Length: ${length}\r\n\r\n` +
      (typeof body === 'string' ? body : '')
    );
  };
  const list = () =>
    `GET /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${key}\r\n\r\n`;

  it('answers the next request on a keep-alive connection after a 413 whose body it can read and drop', async () => {
    const big = JSON.stringify({ title: 'x'.repeat(200_000), url: 'https://e.example/' });
    const { answers } = await exchange(port, [post(big), list()], 2);
    assert.deepEqual(
      answers.map((a) => [a.status, a.headers.connection]),
      [
        [413, 'keep-alive'],
        [200, 'keep-alive'],
      ],
    );
    assert.equal(answers[0]!.headers['content-type'], 'application/problem+json');
    assert.deepEqual(JSON.parse(answers[1]!.body), { data: [], next: null });
  });

  it('answers the next request after a 415 whose body was opened but not read (500 KB under the limit)', async () => {
    const roomy = makeWorld(); // max_body_bytes 1 MiB: the body is opened as a stream by the body limit
    const roomyKey = (await roomy.key()).key;
    const app = createHttpApp(roomy.ctx, logger);
    const other = await listenHttp(app.fetch, { hostname: '127.0.0.1', port: 0, logger });
    try {
      const body = 'x'.repeat(500_000);
      const head = `POST /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${roomyKey}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n`;
      const next = `GET /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${roomyKey}\r\n\r\n`;
      const { answers } = await exchange(
        (other.address() as AddressInfo).port,
        [head, body, next],
        2,
      );
      assert.deepEqual(
        answers.map((a) => a.status),
        [415, 200],
      );
    } finally {
      other.closeAllConnections();
      await new Promise((resolve) => other.close(resolve));
      await roomy.close();
    }
  });

  it('says Connection: close, then closes, after a 413 whose body is too large to drop', async () => {
    const { answers, closed } = await exchange(
      port,
      [post(5 * 1024 * 1024), 'x'.repeat(100_000)],
      2,
    );
    assert.equal(answers.length, 1);
    assert.equal(answers[0]!.status, 413);
    assert.equal(answers[0]!.headers.connection, 'close');
    assert.equal(closed, true);
  });

  it('answers headers over the limit with a 431 problem, then closes the connection', async () => {
    const huge = `GET /v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    const { answers, closed } = await exchange(port, [huge], 2); // waits for the close
    assert.equal(answers.length, 1);
    assert.equal(closed, true);
    assert.equal(answers[0]!.status, 431);
    assert.equal(answers[0]!.headers['content-type'], 'application/problem+json');
    assert.match(answers[0]!.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(answers[0]!.headers.connection, 'close');
    const problem = JSON.parse(answers[0]!.body) as { status: number; title: string };
    assert.equal(problem.status, 431);
    assert.equal(problem.title, 'Request header fields too large');
  });

  it('answers a request it cannot parse with a 400 problem', async () => {
    const { answers } = await exchange(
      port,
      ['GET /v1/endpoints HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n'],
      1,
    );
    assert.equal(answers[0]!.status, 400);
    assert.equal(answers[0]!.headers['content-type'], 'application/problem+json');
    assert.match(JSON.parse(answers[0]!.body).detail, /not valid HTTP\/1\.1 \(HPE_/);
  });

  it('logs a client that hangs up mid-upload at debug only, without a stack', async () => {
    lines.length = 0;
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise((resolve) => socket.on('connect', resolve));
    const reading = new Promise((resolve) => server.once('request', resolve));
    socket.write(post(3000).replace(/\r\n\r\n$/, '\r\n\r\n{"title": "half'));
    await within(reading, 3_000, 'the request');
    socket.destroy();
    await until(
      () => lines.some((l) => l.msg === 'http: request'),
      3_000,
      'the access line of the aborted request',
    );
    const loud = lines.filter((l) => l.level !== 'debug');
    assert.deepEqual(loud, []);
  });
});
