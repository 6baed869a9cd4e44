// Tests for feed autodiscovery on real saved pages from the corpus and on hand-written HTML.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { discoverFeedLinks } from '../../../src/feed/fetch/discover.ts';
import { CORPUS_URL } from '../../support/corpus.ts';

const corpus = CORPUS_URL;
const GUESS_PATHS = [
  '/feed',
  '/rss',
  '/atom.xml',
  '/feed.xml',
  '/rss.xml',
  '/index.xml',
  '/feed.json',
];

function announced(html: string, pageUrl: string) {
  return discoverFeedLinks(html, pageUrl).filter((f) => !f.guessed);
}

describe('discoverFeedLinks on saved pages', () => {
  const pages: {
    file: string;
    pageUrl: string;
    expected: { url: string; type: string; title: string | null }[];
  }[] = [
    {
      file: 'netnewswire-rsparser/DaringFireball.html',
      pageUrl: 'https://daringfireball.net/',
      expected: [
        { url: 'https://daringfireball.net/feeds/main', type: 'application/atom+xml', title: null },
      ],
    },
    {
      file: 'netnewswire-rsparser/YouTubeTheVolvoRocks.html',
      pageUrl: 'https://www.youtube.com/user/TheVolvorocks',
      expected: [
        {
          url: 'https://www.youtube.com/feeds/videos.xml?channel_id=UCct7QF2jcWRY6dhXWMSq9LQ',
          type: 'application/rss+xml',
          title: 'RSS',
        },
      ],
    },
    {
      file: 'netnewswire-rsparser/coco.html',
      pageUrl:
        'https://www.theatlantic.com/entertainment/archive/2017/11/coco-is-among-pixars-best-movies-in-years/546695/',
      expected: [
        {
          url: 'https://www.theatlantic.com/feed/all/',
          type: 'application/rss+xml',
          title: 'The Atlantic',
        },
        {
          url: 'https://www.theatlantic.com/feed/best-of/',
          type: 'application/rss+xml',
          title: 'Best of The Atlantic',
        },
      ],
    },
    {
      file: 'netnewswire-rsparser/furbo.html',
      pageUrl: 'https://furbo.org/',
      expected: [
        {
          url: 'http://furbo.org/feed/',
          type: 'application/rss+xml',
          title: 'Iconfactory News Feed',
        },
      ],
    },
    {
      file: 'netnewswire-rsparser/inessential.html',
      pageUrl: 'https://inessential.com/',
      expected: [
        { url: 'http://inessential.com/xml/rss.xml', type: 'application/rss+xml', title: 'RSS' },
      ],
    },
    {
      file: 'netnewswire-rsparser/sixcolors.html',
      pageUrl: 'https://sixcolors.com/',
      expected: [
        { url: 'http://feedpress.me/sixcolors', type: 'application/rss+xml', title: 'RSS' },
      ],
    },
  ];
  for (const page of pages) {
    it(`finds the announced feeds of ${page.file}, best first`, () => {
      const html = readFileSync(new URL(page.file, corpus), 'utf8');
      const found = announced(html, page.pageUrl).map(({ url, type, title }) => ({
        url,
        type,
        title,
      }));
      assert.deepEqual(found, page.expected);
    });
  }

  it('ignores the app-scheme and media alternates of the YouTube page', () => {
    const html = readFileSync(
      new URL('netnewswire-rsparser/YouTubeTheVolvoRocks.html', corpus),
      'utf8',
    );
    const urls = discoverFeedLinks(html, 'https://www.youtube.com/user/TheVolvorocks').map(
      (f) => f.url,
    );
    assert.ok(urls.every((u) => u.startsWith('https://')));
    assert.ok(!urls.some((u) => u.includes('m.youtube.com')));
  });

  for (const name of [
    'utf8.html',
    'iso-8859-1.html',
    'utf8-meta-after-1024.html',
    'iso-8859-1-meta-after-1024.html',
  ]) {
    it(`offers only the common-path guesses for miniflux/encoding/testdata/${name}, which announces no feed`, () => {
      const html = readFileSync(new URL(`miniflux/encoding/testdata/${name}`, corpus), 'latin1');
      const found = discoverFeedLinks(html, 'https://example.org/blog/post.html');
      assert.deepEqual(
        found,
        GUESS_PATHS.map((p) => ({
          url: `https://example.org${p}`,
          type: null,
          title: null,
          guessed: true,
        })),
      );
    });
  }
});

describe('discoverFeedLinks on hand-written pages', () => {
  const page = 'https://example.com/blog/post/';
  const link = (attrs: string): string => `<html><head><link ${attrs}></head><body></body></html>`;
  const cases: { name: string; html: string; pageUrl?: string; expected: string[] }[] = [
    {
      name: 'resolves a relative href against the page URL',
      html: link('rel="alternate" type="application/rss+xml" href="feed.xml"'),
      expected: ['https://example.com/blog/post/feed.xml'],
    },
    {
      name: 'resolves against <base href> before the page URL',
      html: '<base href="https://cdn.example.net/x/"><link rel=alternate type=application/atom+xml href="atom">',
      expected: ['https://cdn.example.net/x/atom'],
    },
    {
      name: 'resolves a relative <base href> against the page URL',
      html: '<base href="/sub/"><link rel="alternate" type="application/atom+xml" href="atom">',
      expected: ['https://example.com/sub/atom'],
    },
    {
      name: 'uses only the first <base href>',
      html: '<base href="/one/"><base href="/two/"><link rel="alternate" type="application/rss+xml" href="f">',
      expected: ['https://example.com/one/f'],
    },
    {
      name: 'matches rel, type and attribute names case-insensitively',
      html: link('REL="Alternate" TYPE="Application/RSS+XML" HREF="/r"'),
      expected: ['https://example.com/r'],
    },
    {
      name: 'accepts rel with several tokens',
      html: link('rel="feed alternate" type="application/atom+xml" href="/a"'),
      expected: ['https://example.com/a'],
    },
    {
      name: 'ignores parameters after the media type',
      html: link('rel="alternate" type="application/rss+xml; charset=utf-8" href="/r"'),
      expected: ['https://example.com/r'],
    },
    {
      name: 'accepts single-quoted and unquoted attributes',
      html: "<link rel='alternate' type='application/feed+json' href='/j'><link rel=alternate type=application/rss+xml href=/r/>",
      expected: ['https://example.com/j', 'https://example.com/r/'],
    },
    {
      name: 'decodes character references in href and title',
      html: link(
        'rel="alternate" type="application/rss+xml" title="A &amp; B" href="/f?a=1&amp;b=2&#x26;c=3"',
      ),
      expected: ['https://example.com/f?a=1&b=2&c=3'],
    },
    {
      name: 'keeps a ">" inside a quoted attribute',
      html: link('rel="alternate" title="a > b" type="application/rss+xml" href="/gt"'),
      expected: ['https://example.com/gt'],
    },
    {
      name: 'ignores links inside comments',
      html: '<!-- <link rel="alternate" type="application/rss+xml" href="/old"> --><link rel="alternate" type="application/rss+xml" href="/new">',
      expected: ['https://example.com/new'],
    },
    {
      name: 'ignores links inside scripts',
      html: '<script>document.write(\'<link rel="alternate" type="application/rss+xml" href="/js">\')</script>',
      expected: [],
    },
    {
      name: 'ignores alternates that are not feeds',
      html:
        link('rel="alternate" hreflang="fr" href="/fr/"') +
        link('rel="alternate" type="text/html" href="/m"'),
      expected: [],
    },
    {
      name: 'ignores non-alternate feed-typed links',
      html: link('rel="self" type="application/rss+xml" href="/s"'),
      expected: [],
    },
    {
      name: 'drops non-http(s) hrefs',
      html:
        link('rel="alternate" type="application/rss+xml" href="javascript:alert(1)"') +
        link('rel="alternate" type="application/rss+xml" href="feed://example.com/x"'),
      expected: [],
    },
    {
      name: 'drops links without href',
      html: link('rel="alternate" type="application/rss+xml"'),
      expected: [],
    },
    {
      name: 'ranks plain application/json after RSS, Atom and JSON Feed',
      html:
        link('rel="alternate" type="application/json" href="/j.json"') +
        link('rel="alternate" type="application/rss+xml" href="/r"') +
        link('rel="alternate" type="application/feed+json" href="/f.json"'),
      expected: [
        'https://example.com/r',
        'https://example.com/f.json',
        'https://example.com/j.json',
      ],
    },
    {
      name: 'keeps document order among feed types (main feed before comments feed)',
      html:
        link('rel="alternate" type="application/rss+xml" title="Blog » Feed" href="/feed/"') +
        link(
          'rel="alternate" type="application/rss+xml" title="Blog » Comments Feed" href="/comments/feed/"',
        ),
      expected: ['https://example.com/feed/', 'https://example.com/comments/feed/'],
    },
    {
      name: 'skips the WordPress REST API alternate',
      html: link(
        'rel="alternate" type="application/json" href="https://example.com/wp-json/wp/v2/posts/1"',
      ),
      expected: [],
    },
    {
      name: 'lists a URL announced twice once',
      html:
        link('rel="alternate" type="application/rss+xml" href="/r"') +
        link('rel="alternate" type="application/atom+xml" href="https://example.com/r"'),
      expected: ['https://example.com/r'],
    },
    {
      name: 'finds links in the body too',
      html: '<body><link rel="alternate" type="application/rss+xml" href="/b"></body>',
      expected: ['https://example.com/b'],
    },
    {
      name: 'keeps absolute links when the page URL is not a URL',
      html:
        link('rel="alternate" type="application/rss+xml" href="https://x.example/f"') +
        link('rel="alternate" type="application/rss+xml" href="/rel"'),
      pageUrl: 'not a url',
      expected: ['https://x.example/f'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(
        announced(c.html, c.pageUrl ?? page).map((f) => f.url),
        c.expected,
      );
    });
  }

  it('returns the title and type of an announced feed and marks it not guessed', () => {
    const found = discoverFeedLinks(
      link('rel="alternate" type="application/rss+xml" title="A &amp; B" href="/r"'),
      page,
    );
    assert.deepEqual(found[0], {
      url: 'https://example.com/r',
      type: 'application/rss+xml',
      title: 'A & B',
      guessed: false,
    });
  });

  it('appends the common paths at the site root as guesses, without repeating an announced one', () => {
    const found = discoverFeedLinks(
      link('rel="alternate" type="application/rss+xml" href="/feed"'),
      page,
    );
    assert.deepEqual(
      found.map((f) => [f.url, f.guessed]),
      [
        ['https://example.com/feed', false],
        ...GUESS_PATHS.filter((p) => p !== '/feed').map((p) => [`https://example.com${p}`, true]),
      ],
    );
  });

  for (const [name, html] of [
    ['empty input', ''],
    ['plain text', 'no markup at all'],
    ['an unclosed link tag', '<link rel="alternate" type="application/rss+xml" href="/x'],
    ['an unclosed comment', '<!-- <link rel="alternate" type="application/rss+xml" href="/x">'],
  ] as const) {
    it(`returns only guesses for ${name}`, () => {
      assert.ok(discoverFeedLinks(html, page).every((f) => f.guessed));
    });
  }

  it('returns nothing when neither the page URL nor any link is usable', () => {
    assert.deepEqual(discoverFeedLinks('<p>hi</p>', 'not a url'), []);
  });

  it('handles a large hostile page in linear time', () => {
    const hostile = '<link rel="alternate" href="'.repeat(50_000) + "<link a='b".repeat(50_000);
    const started = process.hrtime.bigint();
    discoverFeedLinks(hostile, page);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    assert.ok(ms < 2000, `took ${ms} ms`);
  });
});
