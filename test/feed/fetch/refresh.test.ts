// One feed's refresh: credentials given with a subscribed URL go to its origin only, whatever URL is fetched; the
// whole refresh, discovery included, ends within its total time.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent } from 'undici';
import { readDocument } from '../../../src/feed/parse/read-document.ts';
import { refreshFeed, type RefreshTarget } from '../../../src/feed/fetch/refresh.ts';
import { within } from '../../support/deadline.ts';
import { rss, startOrigin, type Origin } from '../../support/servers.ts';

const BASIC = `Basic ${Buffer.from('alice:s3cret').toString('base64')}`;

describe('refreshFeed credentials', () => {
  let home: Origin; // where the subscribed URL points: the credentials are for it
  let elsewhere: Origin; // another origin: same host, another port
  let agent: Agent;
  before(async () => {
    home = await startOrigin();
    elsewhere = await startOrigin();
    agent = new Agent();
    const feed = { body: rss([{ guid: 'g1' }]) };
    home.set('/feed.xml', feed);
    elsewhere.set('/feed.xml', feed);
    const page = (href: string) => ({
      body: `<!doctype html><html><head><link rel="alternate" type="application/rss+xml" href="${href}"></head></html>`,
      contentType: 'text/html',
    });
    home.set('/page-here.html', page('/feed.xml'));
    home.set('/page-elsewhere.html', page(`${elsewhere.url}/feed.xml`));
  });
  after(async () => {
    await agent.close();
    await home.close();
    await elsewhere.close();
  });

  const refresh = (target: Partial<RefreshTarget> & { url: string }) =>
    refreshFeed(
      {
        fetchUrl: target.url,
        credentials: 'alice:s3cret',
        etag: null,
        lastModified: null,
        bodyHash: null,
        discovered: false,
        keyBase: target.url,
        ...target,
      },
      {
        agent,
        read: async (doc) => readDocument(doc),
        userAgent: 'feedsub-test',
        maxBodyBytes: 1 << 20,
        connectTimeoutMs: 5000,
        totalTimeoutMs: 5000,
        now: () => new Date(),
      },
    );
  /** The Authorization header of each request `origin` received for `path` during `run`. */
  const authorizationsOf = async (origin: Origin, path: string, run: () => Promise<unknown>) => {
    const from = origin.requests.length;
    await run();
    return origin.requests
      .slice(from)
      .filter((r) => r.path === path)
      .map((r) => r.headers.authorization ?? null);
  };

  it('sends them as Basic auth to the origin of the subscribed URL', async () => {
    const got = await authorizationsOf(home, '/feed.xml', async () => {
      assert.equal((await refresh({ url: `${home.url}/feed.xml` })).kind, 'parsed');
    });
    assert.deepEqual(got, [BASIC]);
  });

  it('sends them to a feed discovered on the same origin', async () => {
    const got = await authorizationsOf(home, '/feed.xml', async () => {
      assert.equal((await refresh({ url: `${home.url}/page-here.html` })).kind, 'parsed');
    });
    assert.deepEqual(got, [BASIC]);
  });

  it('does not send them to a feed discovered on another origin', async () => {
    const got = await authorizationsOf(elsewhere, '/feed.xml', async () => {
      const outcome = await refresh({ url: `${home.url}/page-elsewhere.html` });
      assert.equal(outcome.kind === 'parsed' && outcome.discoveredUrl, `${elsewhere.url}/feed.xml`);
    });
    assert.deepEqual(got, [null]);
    // Later polls fetch the discovered URL itself, still without them.
    const again = await authorizationsOf(elsewhere, '/feed.xml', () =>
      refresh({
        url: `${home.url}/page-elsewhere.html`,
        fetchUrl: `${elsewhere.url}/feed.xml`,
        discovered: true,
      }),
    );
    assert.deepEqual(again, [null]);
  });

  it('does not send them to a fetch URL moved to another origin by a permanent redirect', async () => {
    const got = await authorizationsOf(elsewhere, '/feed.xml', async () => {
      const outcome = await refresh({
        url: `${home.url}/moved.xml`,
        fetchUrl: `${elsewhere.url}/feed.xml`,
      });
      assert.equal(outcome.kind, 'parsed');
    });
    assert.deepEqual(got, [null]);
  });

  it('takes another scheme on the same host and port for another origin', async () => {
    const got = await authorizationsOf(home, '/feed.xml', () =>
      refresh({
        url: `${home.url.replace('http:', 'https:')}/feed.xml`,
        fetchUrl: `${home.url}/feed.xml`,
      }),
    );
    assert.deepEqual(got, [null]);
  });
});

describe('refreshFeed deadline', () => {
  it("ends within its total time however many of a page's candidate feeds answer slowly", async () => {
    // A page advertising four feeds, each answering with another page after 600 ms: every fetch stays within the
    // total time on its own, and four of them do not.
    const server = createServer((req, res) => {
      if (req.url === '/page.html') {
        const links = [1, 2, 3, 4]
          .map((n) => `<link rel="alternate" type="application/rss+xml" href="/feed-${n}.xml">`)
          .join('');
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<!doctype html><html><head>${links}</head></html>`);
        return;
      }
      setTimeout(
        () =>
          res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html></html>'),
        600,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = new Agent();
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/page.html`;
    try {
      const started = performance.now();
      const outcome = await within(
        refreshFeed(
          {
            url,
            fetchUrl: url,
            credentials: null,
            etag: null,
            lastModified: null,
            bodyHash: null,
            discovered: false,
            keyBase: url,
          },
          {
            agent,
            read: async (doc) => readDocument(doc),
            userAgent: 'feedsub-test',
            maxBodyBytes: 1 << 20,
            connectTimeoutMs: 5000,
            totalTimeoutMs: 1000,
            now: () => new Date(),
          },
        ),
        1800,
        'the refresh',
      );
      assert.ok(outcome.kind === 'error', JSON.stringify(outcome));
      assert.equal(outcome.errorClass, 'network');
      assert.match(outcome.message, /no feed was found in it within 1 s/);
      assert.ok(performance.now() - started >= 950, 'it used its whole time');
    } finally {
      await agent.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
