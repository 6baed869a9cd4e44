// Entry text with declared types: plain titles, sanitized HTML with absolute URLs, plain renderings, base64.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ALLOWED_TAGS, prepareHtml } from '../../../src/feed/parse/entry-html.ts';
import { htmlToText, looksLikeHtml } from '../../../src/feed/parse/entry-text.ts';
import { parseFeed } from '../../../src/feed/parse/parse.ts';
import { createParsePool } from '../../../src/feed/parse/pool.ts';
import { parseOn } from '../../support/parse.ts';
import type { Entry } from '../../../src/feed/types.ts';

const BASE = { baseUrl: 'https://example.org/blog/feed.xml' };
const atomEntry = (inner: string, attrs = '') =>
  parseFeed(
    `<feed xmlns="http://www.w3.org/2005/Atom"${attrs}><title>T</title><entry><id>1</id>${inner}</entry></feed>`,
    BASE,
  ).entries[0]!;
const rssItem = (inner: string, opts: Partial<typeof BASE> & { sanitizeHtml?: boolean } = {}) =>
  parseFeed(
    `<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>T</title><item>${inner}</item></channel></rss>`,
    { ...BASE, ...opts },
  ).entries[0]!;

test('titles are plain text: Atom text is literal, Atom html and xhtml are rendered, RSS follows feedparser', () => {
  const cases: Array<[string, Entry, string]> = [
    [
      'Atom type="text" stays literal',
      atomEntry('<title type="text">5 &lt; 6 &amp; &lt;b&gt;</title>'),
      '5 < 6 & <b>',
    ],
    [
      'Atom without a type is text',
      atomEntry('<title>a &lt;i&gt;b&lt;/i&gt;</title>'),
      'a <i>b</i>',
    ],
    [
      'Atom type="html" is rendered',
      atomEntry('<title type="html">5 &amp;lt; 6 &lt;b&gt;bold&lt;/b&gt;</title>'),
      '5 < 6 bold',
    ],
    [
      'Atom type="xhtml" is rendered',
      atomEntry(
        '<title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">A &amp; <b>B</b></div></title>',
      ),
      'A & B',
    ],
    ['RSS plain text stays literal', rssItem('<title>I &lt;3 feeds</title>'), 'I <3 feeds'],
    [
      'RSS text that looks like HTML is rendered',
      rssItem('<title>A &lt;b&gt;B&lt;/b&gt;</title>'),
      'A B',
    ],
    ['RSS entities are decoded', rssItem('<title>AT&amp;amp;T &amp;#8217;s</title>'), 'AT&T ’s'],
    ['RSS whitespace collapses to one line', rssItem('<title> a\n\t b </title>'), 'a b'],
  ];
  for (const [name, entry, title] of cases) assert.equal(entry.title, title, name);
});

test("a feed's title is plain text like its entries' titles: HTML is rendered, so no URL of it is left, relative or not", () => {
  // feedparser keeps such a title as HTML with its URLs resolved against the inherited xml:base
  // (wellformed/atom10/relative_uri*.xml); feedsub's titles are plain text, so the link's text is what remains.
  const xhtml =
    '<title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">Example <a href="test.html">test</a> <img src="i.png" alt="pic"/></div></title>';
  const html = '<title type="html">Example &lt;a href="test.html"&gt;test&lt;/a&gt;</title>';
  const cases: Array<[string, string, string]> = [
    [
      'Atom xhtml, xml:base inherited',
      `<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://example.com/test/">${xhtml}<entry xml:base="e/"><id>1</id>${xhtml}</entry></feed>`,
      'Example test',
    ],
    [
      'Atom html',
      `<feed xmlns="http://www.w3.org/2005/Atom">${html}<entry><id>1</id>${html}</entry></feed>`,
      'Example test',
    ],
    [
      'Atom 0.3 application/xhtml+xml',
      `<feed version="0.3" xmlns="http://purl.org/atom/ns#">${xhtml.replace(/"xhtml"/, '"application/xhtml+xml"')}<entry><id>1</id>${xhtml.replace(/"xhtml"/, '"application/xhtml+xml"')}</entry></feed>`,
      'Example test',
    ],
    [
      'RSS that looks like HTML',
      '<rss version="2.0"><channel><title>Example &lt;a href="test.html"&gt;test&lt;/a&gt;</title><item><title>Example &lt;a href="test.html"&gt;test&lt;/a&gt;</title></item></channel></rss>',
      'Example test',
    ],
    [
      'Atom text stays literal',
      '<feed xmlns="http://www.w3.org/2005/Atom"><title>5 &lt; 6</title><entry><id>1</id><title>5 &lt; 6</title></entry></feed>',
      '5 < 6',
    ],
  ];
  for (const [name, doc, title] of cases) {
    const feed = parseFeed(doc, BASE);
    assert.deepEqual([feed.title, feed.entries[0]!.title], [title, title], name);
  }
});

test('HTML is sanitized by default: scripts, handlers, styles, frames and unsafe URLs are removed', () => {
  const dirty =
    '<p onclick="x()" style="color:red" class="c" id="i">Hi <script>alert(1)</script><img src="a.png" onerror="alert(2)"><a href="javascript:alert(3)">js</a> <a href="data:text/html,x">data</a> <img src="data:image/png;base64,AA"></p><iframe src="https://www.youtube.com/embed/x"></iframe><style>p{}</style><form><input></form>';
  const e = rssItem(`<description><![CDATA[${dirty}]]></description>`);
  assert.equal(
    e.summary_html,
    '<p>Hi <img src="https://example.org/blog/a.png" /><a>js</a> <a>data</a> <img /></p><a href="https://www.youtube.com/embed/x">https://www.youtube.com/embed/x</a>',
  );
  assert.equal(e.summary, 'Hi js data\n\nhttps://www.youtube.com/embed/x');
});

test('the allowlist keeps structure, formatting, tables, lists, links, images and media', () => {
  const clean =
    '<h2 title="t">H</h2><p><strong>b</strong> <em>i</em> <code>c</code> <a href="https://x/" hreflang="en">l</a> <a href="mailto:a@b">m</a></p><blockquote cite="https://x/q">q</blockquote><ul><li>1</li></ul><ol start="3"><li>3</li></ol><table><tbody><tr><th scope="col">h</th><td colspan="2">d</td></tr></tbody></table><figure><img src="https://x/i.png" srcset="https://x/i.png 1x, https://x/i2.png 2x" alt="a" width="10" height="20" /><figcaption>f</figcaption></figure><video src="https://x/v.mp4" poster="https://x/p.jpg" controls></video><pre>p</pre>';
  assert.equal(prepareHtml(clean, { base: null, sanitize: true }), clean);
});

test('every URL in HTML is made absolute through xml:base, Content-Location and the feed URL', () => {
  const html = '&lt;a href="/a"&gt;a&lt;/a&gt; &lt;img src="i.png" srcset="i.png, i2.png 2x"&gt;';
  const cases: Array<[string, Entry, string]> = [
    [
      'the feed URL',
      rssItem(`<description>${html}</description>`),
      '<a href="https://example.org/a">a</a> <img src="https://example.org/blog/i.png" srcset="https://example.org/blog/i.png, https://example.org/blog/i2.png 2x" />',
    ],
    [
      'Content-Location over the feed URL',
      rssItem(`<description>${html}</description>`, {
        contentLocation: 'https://cdn.example.net/x/',
      } as Partial<typeof BASE>),
      '<a href="https://cdn.example.net/a">a</a> <img src="https://cdn.example.net/x/i.png" srcset="https://cdn.example.net/x/i.png, https://cdn.example.net/x/i2.png 2x" />',
    ],
    [
      "the entry's and the content's xml:base over both",
      atomEntry(
        `<content type="html" xml:base="sub/">${html}</content>`,
        ' xml:base="https://base.example/root/"',
      ),
      '<a href="https://base.example/a">a</a> <img src="https://base.example/root/sub/i.png" srcset="https://base.example/root/sub/i.png, https://base.example/root/sub/i2.png 2x" />',
    ],
  ];
  for (const [name, entry, expected] of cases)
    assert.equal(entry.summary_html ?? entry.content_html, expected, name);
});

test('with sanitize_html off, markup passes through but URLs are still made absolute', () => {
  const e = rssItem(
    '<description><![CDATA[<p style="x" onclick="y()"><a href="/a">a</a><script>s()</script></p>]]></description>',
    { sanitizeHtml: false },
  );
  assert.equal(
    e.summary_html,
    '<p style="x" onclick="y()"><a href="https://example.org/a">a</a><script>s()</script></p>',
  );
  assert.equal(e.summary, 'a', 'the plain rendering never includes script text');
});

test('content_text renders HTML as plain text: blocks on their own lines, entities decoded, whitespace collapsed', () => {
  const cases: Array<[string, string]> = [
    ['<p>One  &amp;\n two</p><p>Three</p>', 'One & two\n\nThree'],
    ['a<br>b<br/>c', 'a\nb\nc'],
    ['<ul><li>x</li><li>y</li></ul>after', 'x\ny\n\nafter'],
    ['<h1>T</h1><div>d</div>', 'T\n\nd'],
    ['<style>p{}</style><script>x</script>&nbsp;kept&#8217;', 'kept’'],
    ['<pre>a\n  b</pre>', 'a\n  b'],
  ];
  for (const [html, text] of cases) assert.equal(htmlToText(html), text, html);
});

test('RSS content:encoded becomes content_html and content_text; description becomes summary and summary_html', () => {
  const e = rssItem(
    '<description>Short &amp;amp; sweet</description><content:encoded><![CDATA[<p>Long <b>body</b></p>]]></content:encoded>',
  );
  assert.deepEqual(
    [e.summary, e.summary_html, e.content_html, e.content_text],
    ['Short & sweet', 'Short &amp; sweet', '<p>Long <b>body</b></p>', 'Long body'],
  );
});

test('Atom text content is escaped into HTML; base64 content is decoded', () => {
  const cases: Array<[string, Entry, string | null, string | null]> = [
    [
      'type="text" content',
      atomEntry('<content type="text">5 &lt; 6\nand &lt;b&gt;</content>'),
      '5 &lt; 6\nand &lt;b&gt;',
      '5 < 6\nand <b>',
    ],
    [
      'a base64 media type',
      atomEntry(
        `<content type="application/json">${Buffer.from('{"a":"é"}').toString('base64')}</content>`,
      ),
      '{"a":"é"}',
      '{"a":"é"}',
    ],
    [
      'a text/* media type is text, not base64',
      atomEntry('<content type="text/plain">aGk=</content>'),
      'aGk=',
      'aGk=',
    ],
    [
      'base64 of something that is not text',
      atomEntry('<content type="image/png">iVBORw0KGgoAAAANSUhEUg==</content>'),
      null,
      null,
    ],
    [
      'Atom 0.3 mode="base64"',
      parseFeed(
        `<feed version="0.3" xmlns="http://purl.org/atom/ns#"><entry><id>1</id><content type="text/html" mode="base64">${Buffer.from('<p><a href="/x">x</a></p>').toString('base64')}</content></entry></feed>`,
        BASE,
      ).entries[0]!,
      '<p><a href="https://example.org/x">x</a></p>',
      'x',
    ],
  ];
  for (const [name, entry, html, text] of cases)
    assert.deepEqual([entry.content_html, entry.content_text], [html, text], name);
});

test('Atom content of another media type that is not base64 is delivered as its plain text', () => {
  const cases: Array<[string, string, string | null, string | null]> = [
    [
      'JSON written as it is',
      '<content type="application/json">{"a": "x &amp; y", "b": [1, 2]}</content>',
      '{"a": "x &amp; y", "b": [1, 2]}',
      '{"a": "x & y", "b": [1, 2]}',
    ],
    [
      'a summary of another media type',
      '<summary type="application/ld+json">{"@type": "Article"}</summary><content type="application/x-tex">$a &lt; b$</content>',
      '$a &lt; b$',
      '$a < b$',
    ],
    [
      'base64 of something that is not text is still left out',
      '<content type="image/png">iVBORw0KGgoAAAANSUhEUg==</content>',
      null,
      null,
    ],
  ];
  for (const [name, inner, html, text] of cases) {
    const e = atomEntry(inner);
    assert.deepEqual([e.content_html, e.content_text], [html, text], name);
  }
  const e = atomEntry('<summary type="application/ld+json">{"@type": "Article"}</summary>');
  assert.deepEqual([e.summary, e.summary_html], ['{"@type": "Article"}', '{"@type": "Article"}']);
});

test('Atom 0.3 base64 text is decoded in titles, summaries and content, its element prefixed or not', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const entry = (p: string) =>
    `<${p}entry><${p}id>1</${p}id><${p}title mode="base64">${b64('Café <b>bold</b>')}</${p}title>` +
    `<${p}summary mode="base64">\n${b64('5 < 6')}\n</${p}summary>` +
    `<${p}content type="text/html" mode="base64">${b64('<p><a href="/x">x</a></p>')}</${p}content></${p}entry>`;
  const docs: Array<[string, string]> = [
    ['unprefixed', `<feed version="0.3" xmlns="http://purl.org/atom/ns#">${entry('')}</feed>`],
    [
      'prefixed',
      `<a:feed version="0.3" xmlns:a="http://purl.org/atom/ns#"><a:title mode="base64">${b64('Feed')}</a:title>${entry('a:')}</a:feed>`,
    ],
  ];
  for (const [name, doc] of docs) {
    const feed = parseFeed(doc, BASE);
    const e = feed.entries[0]!;
    assert.deepEqual(
      [e.title, e.summary, e.summary_html, e.content_html, e.content_text],
      [
        'Café <b>bold</b>', // Atom 0.3's default type is text/plain: the decoded text is literal
        '5 < 6',
        '5 &lt; 6',
        '<p><a href="https://example.org/x">x</a></p>',
        'x',
      ],
      name,
    );
  }
  assert.equal(parseFeed(docs[1]![1], BASE).title, 'Feed');
});

test('Atom 0.3 base64 content inside RSS (atom:content) is decoded too', () => {
  const e = parseFeed(
    `<rss version="2.0" xmlns:atom="http://purl.org/atom/ns#"><channel><title>T</title><item><guid>1</guid><atom:content type="text/html" mode="base64">${Buffer.from('<p>Body</p>').toString('base64')}</atom:content></item></channel></rss>`,
    BASE,
  ).entries[0]!;
  assert.deepEqual([e.content_html, e.content_text], ['<p>Body</p>', 'Body']);
});

test('looksLikeHtml follows feedparser: a closing tag or entity, and only known tags', () => {
  const cases: Array<[string, boolean]> = [
    ['plain', false],
    ['a <b>b</b>', true],
    ['AT&amp;T', true],
    ['x < y', false],
    ['<custom>x</custom>', false],
    ['a <br> b', false],
  ];
  for (const [s, expected] of cases) assert.equal(looksLikeHtml(s), expected, s);
});

test('hostile HTML stays linear: 120,000 spaces in <pre>, commas in a srcset', async () => {
  // Each would take minutes with a regex that backtracks through the run (an entry's texts stay under what an event
  // carries, 256 KiB, so they come back whole: feed/slim.ts). Parsed on a worker thread that is killed
  // after 20 s: a synchronous hang cannot be cut short on this thread.
  const pool = createParsePool({ size: 1, thresholdBytes: 0, heapMb: 512 }); // time, not memory, is what this checks
  try {
    const content = (html: string) =>
      `<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel><title>T</title><item><guid>1</guid><content:encoded><![CDATA[${html}]]></content:encoded></item></channel></rss>`;
    const pre = await parseOn(pool, content(`<pre>a${' '.repeat(120_000)}b</pre><p>c</p>`), BASE);
    assert.equal(pre.entries[0]!.content_text!.length, 120_005);
    const srcset = `<img src="/i.png" srcset="${','.repeat(120_000)}x 2x">`;
    const img = await parseOn(pool, content(srcset), BASE);
    assert.ok(img.entries[0]!.content_html!.includes('srcset="https://example.org/blog/x 2x"'));
  } finally {
    await pool.close();
  }
});

test("docs/webhooks.md's allowlist names exactly the tags the sanitizer keeps", () => {
  const doc = readFileSync(new URL('../../../docs/webhooks.md', import.meta.url), 'utf8');
  const kept = /Kept: `([^`]+)`/.exec(doc.replace(/\s+/g, ' '))?.[1] ?? '';
  const documented = kept
    .split(' ')
    .flatMap((t) => (t === 'h1–h6' ? ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'] : [t]));
  assert.deepEqual(documented.sort(), [...ALLOWED_TAGS].sort());
});
