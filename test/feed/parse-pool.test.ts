// Parse pool: large bodies parse on a worker thread with the same result as inline; failures fall back or reject.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { FeedParseError, parseFeed } from '../../src/feed/parse.ts';
import { createParsePool } from '../../src/feed/parse-pool.ts';

const OPTS = { baseUrl: 'https://example.org/feed.xml', contentLocation: null };

function bigFeed(items: number): string {
  const body = Array.from(
    { length: items },
    (_, i) =>
      `<item><guid isPermaLink="false">id-${i}</guid><title>Item ${i} &amp; more</title><link>/posts/${i}</link>` +
      `<pubDate>Mon, 0${(i % 9) + 1} Jan 2024 10:00:00 GMT</pubDate><description><![CDATA[<p>${'lorem ipsum '.repeat(30)}</p>]]></description></item>`,
  );
  return `<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title><link>/</link>${body.join('\n')}</channel></rss>`;
}

test('a feed over 1 MiB parses in a worker and yields the same result as inline', async () => {
  const text = bigFeed(3000);
  assert.ok(text.length > 1024 * 1024);
  const pool = createParsePool({ size: 2 });
  try {
    assert.equal(await pool.ready(), 'worker');
    const [fromWorker, again] = await Promise.all([pool.parse(text, OPTS), pool.parse(text, OPTS)]);
    assert.equal(pool.mode, 'worker');
    assert.deepEqual(fromWorker, parseFeed(text, OPTS));
    assert.deepEqual(again, fromWorker);
    assert.equal(fromWorker.entries.length, 3000);
  } finally {
    await pool.close();
  }
});

test('a worker rejects non-feeds with FeedParseError, like parseFeed', async () => {
  const pool = createParsePool({ size: 1, thresholdBytes: 10 });
  try {
    await assert.rejects(
      pool.parse('<!DOCTYPE html><html><body>hello</body></html>', OPTS),
      FeedParseError,
    );
    assert.equal(pool.mode, 'worker');
  } finally {
    await pool.close();
  }
});

test('small bodies and pools without workers parse inline', async () => {
  const failing = createParsePool({
    spawn: () => {
      throw new Error('no workers here');
    },
  });
  const small =
    '<rss version="2.0"><channel><title>s</title><item><guid>1</guid></item></channel></rss>';
  try {
    assert.equal(failing.mode, 'inline');
    assert.equal(await failing.ready(), 'inline');
    assert.deepEqual(await failing.parse(bigFeed(3000), OPTS), parseFeed(bigFeed(3000), OPTS));
    await assert.rejects(failing.parse('<html></html>', OPTS), FeedParseError);
  } finally {
    await failing.close();
  }
  const pool = createParsePool({ size: 1 });
  try {
    assert.deepEqual(await pool.parse(small, OPTS), parseFeed(small, OPTS));
  } finally {
    await pool.close();
  }
});

test('a worker that cannot start makes the pool fall back to inline and finish queued work', async () => {
  const pool = createParsePool({
    size: 1,
    thresholdBytes: 10,
    spawn: () => new Worker('throw new Error("boom")', { eval: true }),
  });
  try {
    const feed = await pool.parse(
      '<rss version="2.0"><channel><title>t</title></channel></rss>',
      OPTS,
    );
    assert.equal(feed.title, 't');
    assert.equal(pool.mode, 'inline');
  } finally {
    await pool.close();
  }
});

test('a parse that exceeds the timeout is rejected and the worker replaced', async () => {
  let spawned = 0;
  const silent = () => {
    spawned++;
    return new Worker(
      "require('node:worker_threads').parentPort.postMessage({ type: 'ready' }); setInterval(() => {}, 1000);",
      { eval: true },
    );
  };
  const pool = createParsePool({ size: 1, thresholdBytes: 10, timeoutMs: 200, spawn: silent });
  try {
    await assert.rejects(
      pool.parse('<rss version="2.0"><channel></channel></rss>', OPTS),
      /timed out/,
    );
    assert.equal(spawned, 2);
    assert.equal(pool.mode, 'worker');
  } finally {
    await pool.close();
  }
});

test('close() terminates the workers and later parses are refused', async () => {
  const pool = createParsePool({ size: 1 });
  await pool.ready();
  await pool.close();
  await assert.rejects(pool.parse('<rss/>', OPTS), /closed/);
});

test("the pool's sanitize_html setting applies on the worker and inline, unless a request says otherwise", async () => {
  const text =
    '<rss version="2.0"><channel><title>s</title><item><guid>1</guid><description><![CDATA[<p onclick="x()"><a href="/a">a</a></p>]]></description></item></channel></rss>';
  const raw = '<p onclick="x()"><a href="https://example.org/a">a</a></p>';
  const clean = '<p><a href="https://example.org/a">a</a></p>';
  const worker = createParsePool({ size: 1, thresholdBytes: 10, sanitizeHtml: false });
  const inline = createParsePool({ size: 1, sanitizeHtml: false });
  try {
    assert.equal(await worker.ready(), 'worker');
    const html = async (pool: typeof worker, opts: object = {}) =>
      (await pool.parse(text, { ...OPTS, ...opts })).entries[0]!.summary_html;
    assert.equal(await html(worker), raw, 'on the worker');
    assert.equal(await html(inline), raw, 'inline');
    assert.equal(await html(worker, { sanitizeHtml: true }), clean, 'a request that says so');
  } finally {
    await Promise.all([worker.close(), inline.close()]);
  }
  assert.equal(parseFeed(text, OPTS).entries[0]!.summary_html, clean, 'sanitized by default');
});
