// Parse pool: documents above a tiny size are read (decoded, parsed, keyed, hashed) on a worker with the same result as inline;
// reads end by their deadline, the queue is bounded, and a document that needs too much memory stops its worker only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { contentHash } from '../../../src/feed/identity/content-hash.ts';
import { EntryList } from '../../../src/feed/entry-list.ts';
import { createParsePool } from '../../../src/feed/parse/pool.ts';
import { readDocument, type DocumentRequest } from '../../../src/feed/parse/read-document.ts';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
import { PARSE_THREAD_NICE } from '../../../src/thread-priority.ts';
import { within } from '../../support/deadline.ts';
import { parseOn } from '../../support/parse.ts';

const BASE = 'https://example.org/feed.xml';

function bigFeed(items: number): string {
  const body = Array.from(
    { length: items },
    (_, i) =>
      `<item><guid isPermaLink="false">id-${i}</guid><title>Item ${i} &amp; more</title><link>/posts/${i}</link>` +
      `<pubDate>Mon, 0${(i % 9) + 1} Jan 2024 10:00:00 GMT</pubDate><description><![CDATA[<p>${'lorem ipsum '.repeat(30)}</p>]]></description></item>`,
  );
  return `<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title><link>/</link>${body.join('\n')}</channel></rss>`;
}

/** A document of `text` (its bytes in a buffer of their own, as a fetch hands them over). */
function doc(text: string | Uint8Array, mode: DocumentRequest['mode'] = 'feed'): DocumentRequest {
  return {
    bytes: new Uint8Array(typeof text === 'string' ? Buffer.from(text) : text),
    contentType: 'application/rss+xml',
    mode,
    parse: { baseUrl: BASE, contentLocation: null },
    keyBase: BASE,
  };
}

const soon = (ms = 10_000) => performance.now() + ms;

/** A worker that says it is ready and then never answers. */
const silent = () =>
  new Worker(
    "require('node:worker_threads').parentPort.postMessage({ type: 'ready' }); setInterval(() => {}, 1000);",
    { eval: true },
  );

test('a large document is read on a worker with the same result as inline, entry keys included', async () => {
  const text = bigFeed(300); // about 170 KB, ten times the 16 KiB read inline
  const pool = createParsePool({ size: 2 });
  try {
    assert.equal(await pool.ready(), 'worker');
    const [fromWorker, again] = await Promise.all([
      pool.read(doc(text), soon()),
      pool.read(doc(text), soon()),
    ]);
    assert.equal(pool.mode, 'worker');
    assert.deepEqual(fromWorker, readDocument(doc(text)));
    assert.deepEqual(again, fromWorker);
    assert.ok(fromWorker.kind === 'feed');
    const entries = new EntryList(fromWorker.entries, fromWorker.publishedAt);
    assert.equal(entries.length, 300);
    assert.deepEqual(
      entries.all(),
      parseFeed(text, { baseUrl: BASE }).entries,
      'entries as parsed',
    );
    assert.equal(fromWorker.identities.length, 300);
    // Each entry's content hash comes with it, so the poll transaction hashes nothing it already knows.
    assert.deepEqual(fromWorker.contentHashes, entries.all().map(contentHash));
    assert.equal(new Set(fromWorker.contentHashes).size, 300, 'one hash per version of an entry');
  } finally {
    await pool.close();
  }
});

test('a worker answers a page with its feed links, and a candidate that is not a feed as such', async () => {
  const pool = createParsePool({ size: 1, thresholdBytes: 10 });
  const page =
    '<!DOCTYPE html><html><head><link rel="alternate" type="application/rss+xml" href="/feed.xml"></head></html>';
  try {
    const links = await pool.read(doc(page, 'page-or-feed'), soon());
    assert.ok(links.kind === 'page');
    assert.equal(links.links[0]?.url, 'https://example.org/feed.xml');
    assert.deepEqual(await pool.read(doc(page, 'candidate'), soon()), { kind: 'not-feed' });
    const refused = await pool.read(doc(page, 'feed'), soon());
    assert.ok(refused.kind === 'error' && refused.parseError, JSON.stringify(refused));
    assert.equal(pool.mode, 'worker');
  } finally {
    await pool.close();
  }
});

test('tiny bodies, and every body of a pool without workers, are read inline', async () => {
  const failing = createParsePool({
    spawn: () => {
      throw new Error('no workers here');
    },
  });
  try {
    assert.equal(await failing.ready(), 'inline');
    assert.deepEqual(
      await failing.read(doc(bigFeed(300)), soon()),
      readDocument(doc(bigFeed(300))),
    );
  } finally {
    await failing.close();
  }
  const pool = createParsePool({ size: 1, spawn: silent }); // a worker would never answer
  const small =
    '<rss version="2.0"><channel><title>s</title><item><guid>1</guid></item></channel></rss>';
  try {
    assert.deepEqual(
      await within(pool.read(doc(small), soon()), 2000, 'an inline read'),
      readDocument(doc(small)),
    );
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
    const read = await pool.read(
      doc('<rss version="2.0"><channel><title>t</title></channel></rss>'),
      soon(),
    );
    assert.ok(read.kind === 'feed');
    assert.equal(read.parsed.title, 't');
    assert.equal(pool.mode, 'inline');
  } finally {
    await pool.close();
  }
});

test('a read still running at its deadline is answered with an error and its worker replaced', async () => {
  let spawned = 0;
  const pool = createParsePool({ size: 1, thresholdBytes: 10, spawn: () => (spawned++, silent()) });
  try {
    await pool.ready();
    const read = await within(
      pool.read(doc('<rss version="2.0"></rss>'), soon(200)),
      2000,
      'the read',
    );
    assert.ok(read.kind === 'error');
    assert.match(read.message, /not read within the poll deadline/);
    assert.equal(spawned, 2);
  } finally {
    await pool.close();
  }
});

test('a read waiting for a worker past its deadline leaves the queue; past maxQueued reads are refused', async () => {
  const pool = createParsePool({ size: 1, thresholdBytes: 10, maxQueued: 2, spawn: silent });
  try {
    await pool.ready();
    const running = pool.read(doc('<rss version="2.0"></rss>'), soon(5000));
    const waiting = pool.read(doc('<rss version="2.0"></rss>'), soon(100));
    const queued = pool.read(doc('<rss version="2.0"></rss>'), soon(5000));
    const third = await pool.read(doc('<rss version="2.0"></rss>'), soon(5000));
    assert.ok(third.kind === 'error');
    assert.match(third.message, /2 documents already wait/);
    const late = await within(waiting, 2000, 'the waiting read');
    assert.ok(late.kind === 'error');
    assert.match(late.message, /not read within the poll deadline/);
    void running;
    void queued;
  } finally {
    await pool.close();
  }
});

test('a document that needs more than the worker heap stops that worker only, and the next read works', async () => {
  const pool = createParsePool({ size: 1, heapMb: 32 });
  try {
    await pool.ready();
    // An 11 MB feed of 20,000 items: its text, its XML tree and 20,000 entries do not fit in 32 MiB. (A 10 MiB body of
    // random bytes no longer does this: it is refused from its head.)
    const garbage = await within(pool.read(doc(bigFeed(20_000)), soon(30_000)), 30_000, 'garbage');
    assert.ok(garbage.kind === 'error' && garbage.parseError, JSON.stringify(garbage));
    assert.match(garbage.message, /needs more than 32 MiB/);
    // The deadline covers starting the replacement worker, which a busy machine slows most.
    const next = await pool.read(doc(bigFeed(100)), soon(30_000));
    assert.ok(next.kind === 'feed');
  } finally {
    await pool.close();
  }
});

test('a long body whose head names a root that is not a feed is refused before it is decoded, in every mode', async () => {
  const pool = createParsePool({ size: 1, heapMb: 32 });
  try {
    await pool.ready();
    // 24 MiB of random bytes decode to ~48 MB of text: decoded whole, they took the 32 MiB worker heap down.
    const body = Buffer.concat([Buffer.from('<?xml version="1.0"?><svg>'), randomBytes(24 << 20)]);
    for (const mode of ['feed', 'page-or-feed'] as const) {
      const reply = await within(pool.read(doc(body, mode), soon(20_000)), 20_000, mode);
      assert.deepEqual(reply, {
        kind: 'error',
        parseError: true,
        message: 'parse: not a feed (root element <svg>)',
      });
    }
    // Random bytes that open a processing instruction early and close it after 64 KiB, before an 11 MB feed: read
    // whole, their root was found and the feed filled the heap; no feed has 64 KiB before its root.
    const late = `<?pi ${'x'.repeat(70_000)}?>${bigFeed(20_000)}`;
    const refused = await within(pool.read(doc(late), soon(20_000)), 20_000, 'late root');
    assert.deepEqual(refused, {
      kind: 'error',
      parseError: true,
      message: 'parse: not a feed (no XML root element in its first 64 KiB)',
    });
    const candidate = await within(
      pool.read(doc(body, 'candidate'), soon(20_000)),
      20_000,
      'candidate',
    );
    assert.deepEqual(candidate, { kind: 'not-feed' });
  } finally {
    await pool.close();
  }
});

test('close() terminates the workers and later reads are refused', async () => {
  const pool = createParsePool({ size: 1 });
  await pool.ready();
  await pool.close();
  const read = await pool.read(doc(bigFeed(100)), soon());
  assert.ok(read.kind === 'error');
  assert.match(read.message, /closed/);
});

test("the pool's sanitize_html setting applies on the worker and inline, unless a request says otherwise", async () => {
  const text =
    '<rss version="2.0"><channel><title>s</title><item><guid>1</guid><description><![CDATA[<p onclick="x()"><a href="/a">a</a></p>]]></description></item></channel></rss>';
  const raw = '<p onclick="x()"><a href="https://example.org/a">a</a></p>';
  const clean = '<p><a href="https://example.org/a">a</a></p>';
  const worker = createParsePool({
    size: 1,
    thresholdBytes: 10,
    sanitizeHtml: false,
  });
  const inline = createParsePool({ size: 1, sanitizeHtml: false });
  try {
    assert.equal(await worker.ready(), 'worker');
    const html = async (pool: typeof worker, opts: object = {}) =>
      (await parseOn(pool, text, { baseUrl: BASE, ...opts })).entries[0]!.summary_html;
    assert.equal(await html(worker), raw, 'on the worker');
    assert.equal(await html(inline), raw, 'inline');
    assert.equal(await html(worker, { sanitizeHtml: true }), clean, 'a request that says so');
  } finally {
    await Promise.all([worker.close(), inline.close()]);
  }
  assert.equal(
    parseFeed(text, { baseUrl: BASE }).entries[0]!.summary_html,
    clean,
    'sanitized by default',
  );
});

/** The nice value of each thread of this process, by thread id (/proc/self/task/<tid>/stat, field 19). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task').map(Number)) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nices.set(tid, Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return nices;
}

test(
  'each parse thread runs below the event loop, which keeps its own priority',
  { skip: process.platform !== 'linux' && 'threads have a priority of their own on Linux only' },
  async (t) => {
    const before = threadNices();
    const main = before.get(process.pid)!;
    const lowered = Math.min(19, main + PARSE_THREAD_NICE);
    if (lowered === main) return t.skip('the tests run at nice 19: no thread can run lower');
    const pool = createParsePool({ size: 2, thresholdBytes: 0 });
    try {
      assert.equal(await pool.ready(), 'worker');
      // A read answered by a worker: its thread is serving, past the point where it lowered itself.
      const reply = await pool.read(doc(bigFeed(5)), soon());
      assert.equal(reply.kind, 'feed');
      const started = [...threadNices()].filter(([tid]) => !before.has(tid));
      assert.equal(
        started.filter(([, nice]) => nice === lowered).length,
        2,
        `one thread per worker at nice ${lowered}: ${JSON.stringify(started)}`,
      );
      assert.equal(threadNices().get(process.pid), main, 'the event loop keeps its priority');
    } finally {
      await pool.close();
    }
  },
);
