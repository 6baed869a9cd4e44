// Undeclared legacy charsets: detected for non-Latin scripts, never over a declaration, never for Western text.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import iconv from 'iconv-lite';
import { decodeFeed } from '../../../src/feed/parse/decode.ts';
import { detectLegacyCharset } from '../../../src/feed/parse/decode-detect.ts';
import { CORPUS_URL } from '../../support/corpus.ts';

const rss = (text: string, prolog = '<?xml version="1.0"?>') =>
  `${prolog}\n<rss version="2.0"><channel><title>News</title>\n<item><title>${text.slice(0, 20)}</title><description>${text}</description></item>\n</channel></rss>\n`;

// Short news paragraphs, about 300 bytes once encoded: smaller than most real feeds.
const TEXT = {
  ja: '今日は東京で新しい展示会が開かれました。多くの人々が訪れ、最新の技術製品を見学しました。主催者によると、来年も同じ時期に開催する予定です。',
  zh: '今天上午，市政府召开新闻发布会，宣布将在明年启动新的城市交通建设计划。该计划包括三条地铁线路和多个公交枢纽，预计总投资超过五百亿元。',
  zhHant:
    '今天上午，市政府召開新聞發布會，宣布將在明年啟動新的城市交通建設計劃。該計劃包括三條地鐵線路和多個公車樞紐，預計總投資超過五百億元。',
  ko: '오늘 서울에서 새로운 전시회가 열렸습니다. 많은 사람들이 방문하여 최신 기술 제품을 구경했습니다. 주최 측은 내년에도 같은 시기에 개최할 예정이라고 밝혔습니다.',
  ru: 'Сегодня в Москве открылась новая выставка современного искусства. Организаторы ожидают, что за месяц её посетят более ста тысяч человек. Вход для студентов бесплатный.',
  th: 'วันนี้มีการเปิดนิทรรศการใหม่ที่กรุงเทพมหานคร ผู้คนจำนวนมากเดินทางมาชมผลงานศิลปะร่วมสมัย ผู้จัดงานคาดว่าจะมีผู้เข้าชมมากกว่าหนึ่งแสนคน',
  he: 'היום נפתחה בתל אביב תערוכה חדשה של אמנות עכשווית. המארגנים מצפים שיותר ממאה אלף איש יבקרו בה במהלך החודש. הכניסה לסטודנטים חינם.',
  el: 'Σήμερα άνοιξε στην Αθήνα μια νέα έκθεση σύγχρονης τέχνης. Οι διοργανωτές αναμένουν ότι περισσότεροι από εκατό χιλιάδες επισκέπτες θα την επισκεφθούν.',
  ar: 'افتتح اليوم في القاهرة معرض جديد للفن المعاصر. ويتوقع المنظمون أن يزوره أكثر من مئة ألف شخص خلال الشهر. الدخول مجاني للطلاب.',
};

test('each feedparser illformed/chardet case is detected as the charset its Expect line names', () => {
  const dir = fileURLToPath(new URL('feedparser/illformed/chardet/', CORPUS_URL));
  // WHATWG names: TIS-620 is read as its superset windows-874, GB2312 as gb18030 (as declared ones are).
  const canonical = (label: string) =>
    /^gb2312$/i.test(label) ? 'gb18030' : new TextDecoder(label).encoding;
  const names = readdirSync(dir);
  for (const name of names) {
    const raw = readFileSync(dir + name);
    const expected = /encoding == '([^']+)'/.exec(raw.toString('latin1'))?.[1];
    assert.ok(expected, `${name} has no Expect line`);
    for (const contentType of [null, 'text/xml']) {
      const d = decodeFeed(raw, contentType);
      assert.deepEqual([d.charset, d.source], [canonical(expected), 'detected'], name);
    }
  }
  assert.equal(names.length, 8);
});

test('undeclared legacy feeds in nine scripts are detected and decoded exactly', () => {
  const cases: Array<[keyof typeof TEXT, string, string]> = [
    ['ja', 'shift_jis', 'shift_jis'],
    ['ja', 'euc-jp', 'euc-jp'],
    ['zh', 'gb18030', 'gb18030'],
    ['zhHant', 'big5', 'big5'],
    ['ko', 'euc-kr', 'euc-kr'],
    ['ru', 'windows-1251', 'windows-1251'],
    ['ru', 'koi8-r', 'koi8-r'],
    ['ru', 'iso-8859-5', 'iso-8859-5'],
    ['ru', 'ibm866', 'ibm866'],
    ['th', 'tis-620', 'windows-874'],
    ['he', 'windows-1255', 'windows-1255'],
    ['el', 'windows-1253', 'windows-1253'],
    ['el', 'iso-8859-7', 'windows-1253'], // the superset decodes the same letters
    ['ar', 'windows-1256', 'windows-1256'],
  ];
  for (const [lang, encoding, charset] of cases) {
    const text = rss(TEXT[lang]);
    const d = decodeFeed(iconv.encode(text, encoding), 'application/rss+xml');
    assert.deepEqual([d.charset, d.source], [charset, 'detected'], `${lang} ${encoding}`);
    assert.equal(d.text, text, `${lang} ${encoding}`);
  }
});

test('a declaration that speaks is never overruled by detection, even when the bytes contradict it', () => {
  const sjis = (prolog?: string) => iconv.encode(rss(TEXT.ja, prolog), 'shift_jis');
  const xmlUtf8 = '<?xml version="1.0" encoding="utf-8"?>';
  const xmlSjis = '<?xml version="1.0" encoding="Shift_JIS"?>';
  const xmlBogus = '<?xml version="1.0" encoding="x-no-such-charset"?>';
  const cases: Array<[string, Uint8Array, string | null, string, string]> = [
    ['XML says utf-8', sjis(xmlUtf8), null, 'windows-1252', 'fallback'],
    ['HTTP says utf-8', sjis(), 'text/xml; charset=utf-8', 'windows-1252', 'fallback'],
    ['HTTP says us-ascii', sjis(), 'application/xml; charset=us-ascii', 'windows-1252', 'fallback'],
    ['XML says Shift_JIS', sjis(xmlSjis), null, 'shift_jis', 'xml'],
    [
      'text/xml without charset is a default, not a declaration',
      sjis(),
      'text/xml',
      'shift_jis',
      'detected',
    ],
    ['an unknown charset name says nothing', sjis(xmlBogus), null, 'shift_jis', 'detected'],
  ];
  for (const [name, bytes, contentType, charset, source] of cases) {
    const d = decodeFeed(bytes, contentType);
    assert.deepEqual([d.charset, d.source], [charset, source], name);
  }
});

test('undeclared Western feeds keep windows-1252: Latin guesses and weak guesses are ignored', () => {
  const cases: Array<[string, string, string]> = [
    [
      'French',
      'windows-1252',
      "L'été dernier, nous sommes allés à la mer. C'était très agréable : le soleil brillait, les enfants jouaient sur la plage et nous avons mangé des crêpes délicieuses. Où irons-nous l'année prochaine ?",
    ],
    [
      'German',
      'windows-1252',
      'Die Bundesregierung hat am Dienstag neue Maßnahmen beschlossen. Künftig müssen Unternehmen über ihre Emissionen berichten. Kritiker äußerten sich skeptisch: „Das reicht nicht“, sagte ein Sprecher.',
    ],
    [
      'Spanish',
      'windows-1252',
      'El niño pequeño comió una manzana mientras su abuela leía el periódico. ¿Qué pasará mañana? La exposición de Picasso abrió sus puertas en Málaga con gran éxito de público.',
    ],
    [
      'English punctuation',
      'windows-1252',
      'Apple’s latest laptops arrived on Tuesday… The company’s “Pro” models now start at €999 — a 10% drop. • Battery life: 18 hours',
    ],
    // The detector reads this as Hebrew, at 0.07: below the threshold.
    ['a run of accents', 'windows-1252', `Caf${'é'.repeat(10)}à${'é'.repeat(9)}`],
    // Detected as windows-1250, but a Latin answer never replaces windows-1252 (documented limit).
    [
      'Polish',
      'windows-1250',
      'Rząd przedstawił nowy projekt ustawy dotyczący ochrony środowiska. Według ministra zmiany wejdą w życie w przyszłym roku. Posłowie opozycji twierdzą, że to za mało.',
    ],
  ];
  for (const [name, encoding, text] of cases) {
    const bytes = iconv.encode(rss(text), encoding);
    const d = decodeFeed(bytes, null);
    assert.deepEqual([d.charset, d.source], ['windows-1252', 'fallback'], name);
    if (encoding === 'windows-1252') assert.equal(d.text, rss(text), name);
  }
});

test('the detector reads the text even behind a long ASCII prologue', () => {
  const filler = Array.from(
    { length: 1500 },
    (_, i) => `<item><guid>item-${i}</guid><title>Item ${i}</title></item>`,
  ).join('\n');
  const text = rss(TEXT.ru).replace('<item>', `${filler}\n<item>`);
  const bytes = iconv.encode(text, 'koi8-r');
  assert.ok(bytes.indexOf(0xc3) > 64 * 1024, 'the Russian text starts past the first 64 KiB');
  const d = decodeFeed(bytes, null);
  assert.deepEqual([d.charset, d.source, d.text === text], ['koi8-r', 'detected', true]);
});

test('detectLegacyCharset answers null for ASCII and never throws', () => {
  assert.equal(detectLegacyCharset(new Uint8Array(0)), null);
  assert.equal(detectLegacyCharset(Buffer.from('<rss/>')), null);
  let seed = 3;
  for (let i = 0; i < 50; i++) {
    const noise = Buffer.from(
      Array.from(
        { length: 64 + i * 97 },
        () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 256,
      ),
    );
    const charset = detectLegacyCharset(noise);
    assert.ok(charset === null || typeof charset === 'string');
  }
});

test('bytes with a NUL in the sample are binary, not a legacy charset: no detection, windows-1252 as before', () => {
  const text = iconv.encode(rss(TEXT.ru), 'windows-1251');
  assert.equal(detectLegacyCharset(text), 'windows-1251');
  const binary = Buffer.concat([text, Buffer.from([0])]);
  assert.equal(detectLegacyCharset(binary), null);
  assert.equal(decodeFeed(binary, 'application/rss+xml').source, 'fallback');
});
