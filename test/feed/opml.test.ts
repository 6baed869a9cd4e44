import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  OPML_MAX_DEPTH,
  OpmlError,
  opmlChunks,
  readOpmlFeeds,
  type OpmlFeedOut,
} from '../../src/feed/opml.ts';

const opml = (body: string, head = '<head><title>Feeds</title></head>') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">\n${head}\n<body>\n${body}\n</body>\n</opml>\n`;

/** The OpmlError message readOpmlFeeds throws for `text`. */
function refusal(text: string, maxFeeds = 1000): string {
  try {
    readOpmlFeeds(text, maxFeeds);
  } catch (err) {
    assert.ok(err instanceof OpmlError, String(err));
    return err.message;
  }
  assert.fail('the document was accepted');
}

describe('readOpmlFeeds', () => {
  it('reads feed outlines at any folder depth, in document order, with entities decoded', () => {
    const feeds = readOpmlFeeds(
      opml(`
  <outline text="Tech">
    <outline text="News">
      <outline type="rss" text="A &amp; B" title="A &#38; B, titled" xmlUrl=" https://a.example/feed?x=1&amp;y=2 " htmlUrl="https://a.example/"/>
    </outline>
    <outline text="C &lt;3" xmlUrl="https://c.example/atom"/>
  </outline>
  <outline text="Not a feed, a note"/>
  <outline type="link" text="A link" url="https://l.example/"/>
  <outline type="atom" text="Typed as a feed, no URL"/>
  <outline text="D" xmlUrl="https://d.example/rss"/>`),
      1000,
    );
    assert.deepEqual(feeds, [
      {
        xmlUrl: 'https://a.example/feed?x=1&y=2',
        title: 'A & B, titled',
        htmlUrl: 'https://a.example/',
        type: 'rss',
        filter: null,
      },
      { xmlUrl: 'https://c.example/atom', title: 'C <3', htmlUrl: null, type: null, filter: null },
      { xmlUrl: null, title: 'Typed as a feed, no URL', htmlUrl: null, type: 'atom', filter: null },
      { xmlUrl: 'https://d.example/rss', title: 'D', htmlUrl: null, type: null, filter: null },
    ]);
  });

  it('reads OPML 1.0 written with names in any case, a byte order mark and no declaration', () => {
    const feeds = readOpmlFeeds(
      '\uFEFF<OPML version="1.0"><HEAD/><BODY><OUTLINE TEXT="X" XMLURL="https://x.example/" TYPE="RSS"/></BODY></OPML>',
      1000,
    );
    assert.deepEqual(feeds, [
      { xmlUrl: 'https://x.example/', title: 'X', htmlUrl: null, type: 'RSS', filter: null },
    ]);
  });

  it('takes only outlines of the outline tree: none in <head>, outside <body> or inside other elements', () => {
    const feeds = readOpmlFeeds(
      `<opml><head><outline xmlUrl="https://head.example/"/></head><body><x><outline xmlUrl="https://x.example/"/></x><outline xmlUrl="https://body.example/"/></body><outline xmlUrl="https://after.example/"/></opml>`,
      1000,
    );
    assert.deepEqual(
      feeds.map((f) => f.xmlUrl),
      ['https://body.example/'],
    );
  });

  it('reads a body with no outline as no feeds', () => {
    assert.deepEqual(readOpmlFeeds(opml(''), 1000), []);
    assert.deepEqual(readOpmlFeeds('<opml><body/></opml>', 1000), []);
  });

  it('refuses a document cut short, naming the element left open and its line', () => {
    const full = opml(
      '<outline text="F">\n<outline xmlUrl="https://a.example/"/>\n<outline xmlUrl="https://b.example/"/>\n</outline>',
    );
    const cut = full.slice(0, full.indexOf('https://b.example/'));
    assert.equal(
      refusal(cut),
      'ends before <outline> opened on line 5 is closed: is it cut short?',
    );
    assert.match(refusal(full.replace('</opml>\n', '')), /ends before <opml> opened on line 2/);
  });

  it('refuses an element closed by an end tag that is not its own, naming both lines', () => {
    const text = opml('<outline text="F">\n<outline xmlUrl="https://a.example/"/>');
    assert.equal(
      refusal(text),
      'line 7: </body> closes <outline> opened on line 5, which has no end tag of its own',
    );
  });

  it('refuses what is not OPML, saying what it is', () => {
    assert.equal(
      refusal('<?xml version="1.0"?><rss version="2.0"><channel/></rss>'),
      'is not an OPML document: its root element is <rss>, not <opml>',
    );
    assert.equal(
      refusal('<!DOCTYPE html><html><body><p>Hi</p></body></html>'),
      'is not an OPML document: its root element is <html>, not <opml>',
    );
    assert.equal(refusal('just some text'), 'is not an OPML document: it has no <opml> element');
    assert.equal(
      refusal('<opml version="2.0"><head/></opml>'),
      'is not an OPML document: <opml> has no <body>',
    );
    assert.equal(
      refusal('<opml><body/></opml>\n<opml><body/></opml>'),
      'line 2: has a second root element after </opml>',
    );
  });

  it('never expands an entity a DOCTYPE declares, internal or external', () => {
    const laughs = [
      '<!ENTITY a "aaaaaaaaaa">',
      ...Array.from(
        { length: 9 },
        (_, i) =>
          `<!ENTITY ${'b'.repeat(i + 1)} "${`&${i === 0 ? 'a' : 'b'.repeat(i)};`.repeat(10)}">`,
      ),
      '<!ENTITY xxe SYSTEM "file:///etc/passwd">',
    ].join('\n');
    const text = `<?xml version="1.0"?>\n<!DOCTYPE opml [\n${laughs}\n]>\n<opml><body><outline text="&bbbbbbbbb;" title="&xxe;" xmlUrl="https://x.example/?q=&xxe;"/></body></opml>`;
    assert.deepEqual(readOpmlFeeds(text, 1000), [
      {
        xmlUrl: 'https://x.example/?q=&xxe;',
        title: '&xxe;',
        htmlUrl: null,
        type: null,
        filter: null,
      },
    ]);
  });

  it(`refuses elements nested more than ${OPML_MAX_DEPTH} deep, however deep, without recursing`, () => {
    const nest = (n: number) =>
      opml(
        `${'<outline text="f">'.repeat(n)}<outline xmlUrl="https://deep.example/"/>${'</outline>'.repeat(n)}`,
      );
    // <opml> and <body> are two of the levels; the feed outline is the last.
    assert.equal(readOpmlFeeds(nest(OPML_MAX_DEPTH - 3), 1000).length, 1);
    assert.equal(
      refusal(nest(OPML_MAX_DEPTH - 2)),
      `line 5: nests elements more than ${OPML_MAX_DEPTH} deep`,
    );
    assert.match(refusal(nest(200_000)), /nests elements more than/);
  });

  it('refuses more feeds than the limit, counting feeds only, not folders', () => {
    const feeds = (n: number) =>
      Array.from({ length: n }, (_, i) => `<outline xmlUrl="https://f${i}.example/"/>`).join('\n');
    const text = (n: number) => opml(`<outline text="folder">\n${feeds(n)}\n</outline>`);
    assert.equal(readOpmlFeeds(text(3), 3).length, 3);
    assert.equal(
      refusal(text(4), 3),
      'line 9: lists more than 3 feeds; import it in parts of at most 3',
    );
  });
});

// A subscription filter's JSON text, with what XML escapes.
const FILTER = '{"keep":[{"field":"title","contains":"a\\"b <c>"}],"block":[]}';

describe('opmlChunks', () => {
  const now = new Date('2026-03-03T10:00:00.000Z');

  it('writes OPML 2.0 with a folder per group that the reader reads back, escaping what XML needs', async () => {
    const tricky = 'Q&A <"quoted"> \t tabbed\nnewline\u0001';
    const feeds: OpmlFeedOut[] = [
      {
        title: tricky,
        xmlUrl: 'https://a.example/?x=1&y="2"',
        htmlUrl: 'https://a.example/',
        paused: false,
        filter: null,
      },
      { title: 'B', xmlUrl: 'https://b.example/', htmlUrl: null, paused: true, filter: FILTER },
    ];
    const chunks: string[] = [];
    for await (const chunk of opmlChunks('My <feeds>', now, [
      { title: 'Prod & co', pages: [feeds] },
      { title: 'Empty', pages: [[]] },
    ]))
      chunks.push(chunk);
    const text = chunks.join('');
    assert.match(text, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<opml version="2.0">/);
    assert.match(text, /<title>My &lt;feeds&gt;<\/title>/);
    assert.match(text, /<dateCreated>Tue, 03 Mar 2026 10:00:00 GMT<\/dateCreated>/);
    assert.match(text, /<outline text="Prod &amp; co">/);
    assert.doesNotMatch(text, /Empty/, 'a folder with no feed is left out');
    assert.match(
      text,
      /<outline type="rss" text="B" title="B" xmlUrl="https:\/\/b.example\/" feedsubStatus="paused" feedsubFilter="\{&quot;keep&quot;:\[\{&quot;field&quot;:&quot;title&quot;,&quot;contains&quot;:&quot;a\\&quot;b &lt;c&gt;&quot;\}\],&quot;block&quot;:\[\]\}"\/>/,
    );
    assert.deepEqual(readOpmlFeeds(text, 1000), [
      {
        xmlUrl: 'https://a.example/?x=1&y="2"',
        title: 'Q&A <"quoted"> \t tabbed\nnewline',
        htmlUrl: 'https://a.example/',
        type: 'rss',
        filter: null,
      },
      { xmlUrl: 'https://b.example/', title: 'B', htmlUrl: null, type: 'rss', filter: FILTER },
    ]);
  });

  it('takes the next page of feeds only when the chunk before it is taken', async () => {
    let pulled = 0;
    function* pages(): Generator<OpmlFeedOut[]> {
      for (let i = 0; i < 3; i++) {
        pulled++;
        yield [
          {
            title: `F${i}`,
            xmlUrl: `https://f${i}.example/`,
            htmlUrl: null,
            paused: false,
            filter: null,
          },
        ];
      }
    }
    const it = opmlChunks('T', now, [{ title: 'Folder', pages: pages() }]);
    await it.next(); // the head
    assert.equal(pulled, 0);
    assert.match(String((await it.next()).value), /<outline text="Folder">\n.*F0/);
    assert.equal(pulled, 1);
    await it.next();
    assert.equal(pulled, 2);
  });
});
