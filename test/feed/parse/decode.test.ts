// Charset detection: BOM, HTTP charset (RFC 3023), XML declaration, UTF-16/32 sniffing, UTF-8, windows-1252.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { decodeFeed, demoronize, httpCharset } from '../../../src/feed/parse/decode.ts';
import { CORPUS_URL, corpusBytes } from '../../support/corpus.ts';

const corpus = corpusBytes;
const bytes = (...parts: Array<string | number[]>) =>
  Buffer.concat(
    parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))),
  );
const XML = '<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>';

test('each feedparser encoding case decodes to the charset its Expect line names, served with its Header line', () => {
  const dir = fileURLToPath(new URL('feedparser/encoding/', CORPUS_URL));
  let checked = 0;
  for (const name of readdirSync(dir)) {
    const raw = readFileSync(dir + name);
    const probe = decodeFeed(raw, null).text;
    const expected = /encoding\s*==\s*'([^']+)'/.exec(probe)?.[1];
    if (!expected) continue;
    // Cases without a Header line are read as local files upstream: no HTTP content type at all.
    const contentType = /Header:\s*Content-type:\s*(.*)/i.exec(probe)?.[1]?.trim() ?? null;
    assert.equal(decodeFeed(raw, contentType).charset, expected, `${name} (${contentType})`);
    checked++;
  }
  assert.ok(checked >= 60, `only ${checked} cases had an encoding expectation`);
});

test('the decision source follows the precedence BOM → HTTP → XML declaration → UTF-8 → windows-1252', () => {
  const cases: Array<[string, Uint8Array, string | null, string, string]> = [
    [
      'UTF-8 BOM beats an HTTP charset',
      bytes([0xef, 0xbb, 0xbf], XML),
      'text/xml; charset=iso-8859-1',
      'utf-8',
      'bom',
    ],
    [
      'UTF-16LE BOM',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(XML, 'utf16le')]),
      null,
      'utf-16le',
      'bom',
    ],
    [
      'UTF-16BE BOM',
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(XML, 'utf16le').swap16()]),
      null,
      'utf-16be',
      'bom',
    ],
    ['UTF-32LE BOM', bytes([0xff, 0xfe, 0, 0], [0x3c, 0, 0, 0]), null, 'utf-32le', 'bom'],
    ['UTF-32BE BOM', bytes([0, 0, 0xfe, 0xff], [0, 0, 0, 0x3c]), null, 'utf-32be', 'bom'],
    ['UTF-16LE without BOM', Buffer.from(XML, 'utf16le'), 'application/xml', 'utf-16le', 'xml'],
    [
      'UTF-16BE without BOM, HTTP says utf-16',
      Buffer.from(XML, 'utf16le').swap16(),
      'text/xml; charset=utf-16',
      'utf-16be',
      'http',
    ],
    [
      'HTTP charset beats the XML declaration',
      bytes('<?xml version="1.0" encoding="iso-8859-1"?><a>\xe9</a>'),
      'application/xml; charset=windows-1252',
      'windows-1252',
      'http',
    ],
    [
      'application/* without charset defers to the declaration',
      bytes('<?xml version="1.0" encoding="iso-8859-1"?><a>\xe9</a>'),
      'application/rss+xml',
      'iso-8859-1',
      'xml',
    ],
    [
      'text/* without charset is us-ascii (RFC 3023 §3.1)',
      bytes(XML),
      'text/xml',
      'us-ascii',
      'http',
    ],
    [
      'text/* default yields to the declaration when bytes are not ASCII',
      bytes('<?xml version="1.0" encoding="iso-8859-1"?><a>\xe9</a>'),
      'text/xml',
      'iso-8859-1',
      'xml',
    ],
    ['no charset anywhere, valid UTF-8', Buffer.from('<a>é</a>', 'utf8'), null, 'utf-8', 'utf-8'],
    ['no charset anywhere, invalid UTF-8', bytes('<a>\xe9</a>'), null, 'windows-1252', 'fallback'],
    [
      'unknown charset names are ignored',
      bytes('<?xml version="1.0" encoding="bogus"?><a/>'),
      'text/xml; charset=bogus',
      'utf-8',
      'utf-8',
    ],
    [
      'a declared UTF-8 that does not validate falls back',
      bytes('<?xml version="1.0" encoding="utf-8"?><a>\xe9</a>'),
      null,
      'windows-1252',
      'fallback',
    ],
    [
      'a legacy label on valid non-ASCII UTF-8 is a mislabel',
      Buffer.from('<?xml version="1.0" encoding="windows-1252"?><a>€</a>', 'utf8'),
      null,
      'utf-8',
      'utf-8',
    ],
    [
      'gb2312 decodes as its superset gb18030',
      bytes('<a/>'),
      'application/xml; charset=gb2312',
      'gb18030',
      'http',
    ],
  ];
  for (const [name, input, contentType, charset, source] of cases) {
    const d = decodeFeed(input, contentType);
    assert.deepEqual([d.charset, d.source], [charset, source], name);
  }
});

test('decoded text is correct for legacy and wide encodings', () => {
  const cases: Array<[string, Uint8Array, string | null, string]> = [
    [
      'Latin-1 feed',
      corpus('miniflux/encoding/testdata/iso-8859-1.xml'),
      'application/xml',
      '<title>Café</title>',
    ],
    [
      'windows-1252 curly quotes (0x93/0x94)',
      corpus('feedparser/encoding/http_text_xml_charset_2.xml'),
      'text/xml; charset=windows-1252',
      'This is a £“test.”',
    ],
    [
      'windows-1252 euro sign',
      corpus('miniflux/encoding/testdata/windows-1252.xml'),
      null,
      'Euro €',
    ],
    [
      'mislabelled UTF-8',
      corpus('miniflux/encoding/testdata/windows-1252-incorrect-prolog.xml'),
      null,
      'Euro €',
    ],
    [
      'UTF-8 declared, Latin-1 bytes',
      corpus('miniflux/xml/testdata/iso88591_utf8_mismatch.xml'),
      null,
      'Anaïs',
    ],
    ['KOI8-R', corpus('miniflux/encoding/testdata/koi8r.xml'), null, 'Пример RSS ленты'],
    ['windows-1251', corpus('miniflux/parser/testdata/encoding_WINDOWS-1251.xml'), null, 'Цитата'],
    ['EUC-KR', corpus('feedparser/encoding/euc-kr.xml'), null, '\ub144'],
    [
      'UTF-32BE without BOM',
      corpus('feedparser/encoding/utf-32be-autodetect.xml'),
      null,
      '<?xml version="1.0"',
    ],
    [
      'UTF-16LE with BOM (BOM removed)',
      corpus('feedparser/encoding/utf-16le-bom.xml'),
      null,
      '<?xml version="1.0"',
    ],
  ];
  for (const [name, input, contentType, expected] of cases) {
    assert.ok(decodeFeed(input, contentType).text.includes(expected), name);
  }
  assert.ok(
    decodeFeed(corpus('feedparser/encoding/utf-16le-bom.xml'), null).text.startsWith('<?xml'),
  );
});

test('httpCharset reads the charset parameter leniently and applies the text/* default', () => {
  const cases: Array<[string | null, string | null]> = [
    [null, null],
    ['application/xml', null],
    ["application/atom+xml;charset='us-ascii'", 'us-ascii'],
    ['application/xml;charset = "UTF-8"', 'utf-8'],
    ['text/xml; charset:iso-8859-1', 'us-ascii'],
    ['text/xml; qs=0.9', 'us-ascii'],
    ['text/html; charset=latin1', 'iso-8859-1'],
    ['application/json', null],
  ];
  for (const [header, expected] of cases)
    assert.equal(httpCharset(header), expected, String(header));
});

test('decodeFeed never throws, whatever the bytes', () => {
  const inputs = [
    new Uint8Array(0),
    bytes([0xff]),
    bytes([0, 0]),
    bytes([0xfe, 0xff, 0xd8]),
    bytes([0, 0, 0, 0x3c, 0xff]),
    Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
  ];
  for (const input of inputs) {
    for (const ct of [
      null,
      'text/xml',
      'application/xml; charset=utf-32',
      'text/xml; charset=nonsense',
    ]) {
      assert.equal(typeof decodeFeed(input, ct).text, 'string');
    }
  }
});

test('demoronize maps C1 controls to their windows-1252 characters and keeps undefined ones', () => {
  assert.equal(
    demoronize('don\u0092t \u0093q\u0094 \u0080 \u009d'),
    'don\u2019t \u201cq\u201d \u20ac \u009d',
  );
});

test('windows-1252 decodes every byte as demoronized latin-1, in a long text with C1 bytes as in a short one', () => {
  const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const long = Buffer.concat(Array.from({ length: 4096 }, () => every)); // 1 MiB, 1/8 of it 0x80–0x9F
  const expected = demoronize(every.toString('latin1'));
  const decoded = decodeFeed(long, 'text/xml; charset=windows-1252');
  assert.equal(decoded.charset, 'windows-1252');
  assert.equal(decoded.text.length, long.length);
  assert.equal(decoded.text, expected.repeat(4096));
  // Without a byte in 0x80–0x9F the text is latin-1 as it is.
  const latin = Buffer.from('caf\xe9 \xa9 2024', 'latin1');
  assert.equal(decodeFeed(latin, 'text/xml; charset=iso-8859-1').text, 'café © 2024');
});
