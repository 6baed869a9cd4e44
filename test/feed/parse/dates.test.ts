// parseFeedDate: zone names and offsets, the loose forms feeds write, and junk that must stay null.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFeedDate } from '../../../src/feed/parse/dates.ts';

type Case = [string, string | null];
const check = (cases: Case[]) => {
  for (const [raw, expected] of cases) assert.equal(parseFeedDate(raw), expected, raw);
};

test('zone abbreviations read with their offsets, ambiguous ones as the table documents', () => {
  check([
    ['Thu, 30 Apr 2015 08:57:00 MET', '2015-04-30T07:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 MEST', '2015-04-30T06:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 CET', '2015-04-30T07:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 CEST', '2015-04-30T06:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 MESZ', '2015-04-30T06:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 SGT', '2015-04-30T00:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 HKT', '2015-04-30T00:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 JST', '2015-04-29T23:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 AEST', '2015-04-29T22:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 MSK', '2015-04-30T05:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 NZDT', '2015-04-29T19:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 NST', '2015-04-30T12:27:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 IST', '2015-04-30T03:27:00.000Z'], // India, not Ireland/Israel
    ['Thu, 30 Apr 2015 08:57:00 BST', '2015-04-30T07:57:00.000Z'], // British Summer Time
    ['Thu, 30 Apr 2015 08:57:00 CST', '2015-04-30T14:57:00.000Z'], // US Central, not China
    ['Thu, 30 Apr 2015 08:57:00 AST', '2015-04-30T12:57:00.000Z'], // Atlantic, not Arabia
    ['Thu, 30 Apr 2015 08:57:00 EDT', '2015-04-30T12:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 pdt', '2015-04-30T15:57:00.000Z'],
    ['Thu, 30 Apr 2015 08:57:00 UT', '2015-04-30T08:57:00.000Z'],
    ['Wed, 19 Aug 2009 18:28:00 Etc/GMT', '2009-08-19T18:28:00.000Z'],
    ['Wed, 19 Aug 2009 18:28:00 Etc/GMT+5', '2009-08-19T23:28:00.000Z'], // IANA's reversed sign
  ]);
});

test('US generic zones ET/CT/MT/PT/AT take the offset in force on that date', () => {
  check([
    ['Mon, 26 January 2004 16:31:00 ET', '2004-01-26T21:31:00.000Z'],
    ['Mon, 26 January 2004 16:31:00 CT', '2004-01-26T22:31:00.000Z'],
    ['Mon, 26 January 2004 16:31:00 MT', '2004-01-26T23:31:00.000Z'],
    ['Mon, 26 January 2004 16:31:00 PT', '2004-01-27T00:31:00.000Z'],
    ['Mon, 26 January 2004 16:31:00 AT', '2004-01-26T20:31:00.000Z'],
    ['Mon, 26 July 2004 16:31:00 ET', '2004-07-26T20:31:00.000Z'],
    ['Mon, 26 July 2004 16:31:00 PT', '2004-07-26T23:31:00.000Z'],
    ['Mon, 26 July 2004 16:31:00 AT', '2004-07-26T19:31:00.000Z'],
  ]);
});

test('IANA zone names resolve through daylight saving time, gaps and overlaps included', () => {
  check([
    ['Fri, 31 Mar 2023 20:19:00 America/Los_Angeles', '2023-04-01T03:19:00.000Z'],
    ['Thu, 25 Feb 2016 00:00:00 Europe/Brussels', '2016-02-24T23:00:00.000Z'],
    // 02:30 does not exist on these mornings: read with the offset before the jump.
    ['Sun, 08 Mar 2020 02:30:00 America/New_York', '2020-03-08T07:30:00.000Z'],
    ['Sun, 29 Mar 2020 02:30:00 Europe/Berlin', '2020-03-29T01:30:00.000Z'],
    // 01:30 / 02:30 happen twice on these nights: the first one.
    ['Sun, 01 Nov 2020 01:30:00 America/New_York', '2020-11-01T05:30:00.000Z'],
    ['Sun, 25 Oct 2020 02:30:00 Europe/Berlin', '2020-10-25T00:30:00.000Z'],
    ['Fri, 31 Mar 2023 20:19:00 Mars/Olympus_Mons', null],
  ]);
});

test('numeric offsets in every spelling, with comments and redundant names after them', () => {
  check([
    ['Wed, 19 Feb 2012 22:40:00 -01:01', '2012-02-19T23:41:00.000Z'],
    ['Wed, 19 Feb 2012 22:40:00 GMT-01:01', '2012-02-19T23:41:00.000Z'],
    ['Tue, 10 Jun 2003 04:00:00 GMT+2', '2003-06-10T02:00:00.000Z'],
    ['September 17, 2012 at 5:00pm UTC-05', '2012-09-17T22:00:00.000Z'],
    ['Wed, 3 Apr 2002 14:58:26-0800', '2002-04-03T22:58:26.000Z'],
    ['Mon, 2 Jan 2006 15:04:05 -0700 (MST)', '2006-01-02T22:04:05.000Z'],
    ['Thu Nov 12 2020 17:00:00 GMT+0000 (Coordinated Universal Time)', '2020-11-12T17:00:00.000Z'],
    ['Mon Aug 10 15:44:11 PST-0700 2015', '2015-08-10T22:44:11.000Z'],
    ['2015-02-08 03:02:00 +0300 MSK', '2015-02-08T00:02:00.000Z'],
    ['2018-06-29 19:09:57 +0300 +03', '2018-06-29T16:09:57.000Z'],
    ['2020-11-08T16:20:00-05:00Z', '2020-11-08T21:20:00.000Z'],
    ['2004-07-08 23:56:58 -00:20', '2004-07-09T00:16:58.000Z'],
    ['2012-08-03 18:31:59 UTC', '2012-08-03T18:31:59.000Z'],
  ]);
});

test('RFC 1123 §5.2.14: military single letters other than J read as UTC (their RFC 822 signs were wrong)', () => {
  check([
    ['Wed, 23 Jun 2010 03:43:50 Z', '2010-06-23T03:43:50.000Z'],
    ['Wed, 23 Jun 2010 03:43:50 A', '2010-06-23T03:43:50.000Z'],
    ['Wed, 23 Jun 2010 03:43:50 Y', '2010-06-23T03:43:50.000Z'],
    ['Wed, 23 Jun 2010 03:43:50 J', null],
  ]);
});

test('loose forms real feeds write', () => {
  check([
    ['Sat, 15 Feb 2026 10:00 PM EST', '2026-02-16T03:00:00.000Z'],
    ['Sun, 17 Dec 2017 1:55 PM EST', '2017-12-17T18:55:00.000Z'],
    ['Mon, 13 Feb, 2012 06:28:00 UTC', '2012-02-13T06:28:00.000Z'],
    ['5 August, 2019', '2019-08-05T00:00:00.000Z'],
    ['Fri, 2006/09/15 08:19:53 EDT', '2006-09-15T12:19:53.000Z'],
    ['2014/4/2 04:08', '2014-04-02T04:08:00.000Z'],
    ['2014年04月08日 19:17:22', '2014-04-08T19:17:22.000Z'],
    ['Friday, December 22, 2017 - 3:09pm', '2017-12-22T15:09:00.000Z'],
    ['Thu, June 22, 2023 at 01:11 PM EDT', '2023-06-22T17:11:00.000Z'],
    ['Nov. 16, 2020, 10:57 a.m.', '2020-11-16T10:57:00.000Z'],
    ['Jan. 4, 2016, 12:37 p.m.', '2016-01-04T12:37:00.000Z'],
    ['May 8, 2009 12:07:51 AM', '2009-05-08T00:07:51.000Z'],
    ["Sept. 7, '70", '1970-09-07T00:00:00.000Z'],
    ['Mon, 16th Nov 2020 13:16:28 GMT', '2020-11-16T13:16:28.000Z'],
    ['Thurs, 15 Oct 2020 00:00:39 +0000', '2020-10-15T00:00:39.000Z'],
    ['Mon,02 January 2006 15:04:05 EST', '2006-01-02T20:04:05.000Z'],
    ['Friday, 19-Nov-82 16:14:55 EST', '1982-11-19T21:14:55.000Z'],
    ['Wed, 3 Apr 2002 14.58.26 +0800', '2002-04-03T06:58:26.000Z'],
    ['Thu, 03 Jul 2017 8:8:4 +0100', '2017-07-03T07:08:04.000Z'],
    ['Sun Jan  4 16:29:06 2004', '2004-01-04T16:29:06.000Z'],
    ['Sun Jul 15 01:16:00 +0000 2012', '2012-07-15T01:16:00.000Z'],
    ['Thu Aug 30 2012 17:26:16 +0200', '2012-08-30T15:26:16.000Z'],
    ['2013-Feb-03', '2013-02-03T00:00:00.000Z'],
    ['2003-012-31T10:14:55+00:00', '2003-12-31T10:14:55.000Z'], // Google's zero-padded month
    ['2009-08-08T2:8:8', '2009-08-08T02:08:08.000Z'],
    ['2014-04-26 05:24:37 PM', '2014-04-26T17:24:37.000Z'],
    ['2014-05-11 08:20:13,787', '2014-05-11T08:20:13.787Z'],
    ['2003-12-31T10:14:55.9999Z', '2003-12-31T10:14:55.999Z'], // truncated, never carried
    ['2004-01-01T24:00:00Z', '2004-01-02T00:00:00.000Z'],
    ['  Thu,\n 01 Jan 2004\t19:48:21   GMT ', '2004-01-01T19:48:21.000Z'],
  ]);
});

test('localized month and weekday names in the languages CMSs most often localize', () => {
  check([
    ['Di, 23 Jan 2018 00:00:00 +0100', '2018-01-22T23:00:00.000Z'],
    ['Do, 29 Mär 2018 00:00:00 +0200', '2018-03-28T22:00:00.000Z'],
    ['mer, 9 avr 2018 00:00:00 +0200', '2018-04-08T22:00:00.000Z'],
    ['ven., 03 juil. 2020 15:09:58 +0000', '2020-07-03T15:09:58.000Z'],
    ['mar., 01 déc. 2020 16:11:02 +0000', '2020-12-01T16:11:02.000Z'],
    ['Lundi, 16. Novembre 2020 - 15:54', '2020-11-16T15:54:00.000Z'],
    ['lun, 05 ago 2019 10:00:00 +0200', '2019-08-05T08:00:00.000Z'],
    ['qua, 02 out 2019 10:00:00 -0300', '2019-10-02T13:00:00.000Z'],
    ['di, 12 mrt 2019 10:00:00 +0100', '2019-03-12T09:00:00.000Z'],
  ]);
});

test('two-digit and three-digit years follow RFC 2822 §4.3', () => {
  check([
    ['Thu, 01 Jan 04 19:48:21 GMT', '2004-01-01T19:48:21.000Z'],
    ['01 Jan 49 00:00 GMT', '2049-01-01T00:00:00.000Z'],
    ['01 Jan 50 00:00 GMT', '1950-01-01T00:00:00.000Z'],
    ['25 Feb 71 13:47:26 -0800', '1971-02-25T21:47:26.000Z'],
    ['01 Jan 103 00:00 GMT', '2003-01-01T00:00:00.000Z'],
  ]);
});

test('junk, impossible fields and ambiguous numbers are never read as a date', () => {
  check([
    ['2013-01-27-01', null], // a date then junk, not a zone
    ['2013-01-27 -01', null],
    ['2013-01-28T11:30:00-06:00Textra', null],
    ['2013-01-28T09:xx:00Z', null],
    ['2013-01-28T09:00:00+00:xx', null],
    ['2013-13-01', null],
    ['2013-02-30', null],
    ['Sun, 30 Feb 2013 10:00:00 GMT', null],
    ['Sun, 99 Jun 2009 12:00:00 GMT', null],
    ['2003-12-31T25:14:55Z', null],
    ['2003-12-31T24:00:01Z', null],
    ['2003-12-31T10:61:55Z', null],
    ['2003-12-31T10:14:61Z', null],
    ['Tue, 06 Jun 2017 07:39:33 +2600', null],
    ['9999-12-31T23:59:59-99:99', null],
    ['Fri, 31 Dec 9999 23:59:59 -1400', null], // would land in year 10000
    ['Thu, 01 Jan 0100 00:00:01 +0100', null],
    ['Sun, 16 Dec 2012 1:2:3:4 GMT', null],
    ['Wed, 3 Apr 2002 12.34.56.78+0800', null],
    ['Sun, 16 zzz 2012 11:47:32 GMT', null],
    ['Sun, Dec x 2012 11:47:32 GMT', null],
    ['septe. 7, 1970', null],
    ['17 June , 2022', null],
    ['Friday, 19-Nov- 16:14:55 EST', null],
    ['May 8, 2009 13:07:51 PM', null],
    ['May 8, 2009 0:07:51 AM', null],
    ['Wed, 02 Oct 2002 08:00:00 XYZ', null],
    ['12 Jan 2020 and then some', null],
    ['Nov 2020', null],
    ['2014.05', null],
    ['22013', null],
    ['013', null],
    ['031231', null], // ISO 8601:1988 two-digit years: indistinguishable from numbers
    ['20140722105203', null],
    ['1520932969', null], // Unix time: seconds, milliseconds or an id?
    ['03/04/2020', null], // March 4 or 3 April
    ['Mon, 03/30/2020 - 19:19', null],
    ['30.10.23', null],
    ['Sat, 11 04 2020 08:51:49 +0100', null],
    ['2004 12:00', null],
    ['yesterday', null],
    ['', null],
    ['   ', null],
    [`Thu, 01 Jan 2004 19:48:21 GMT${' '.repeat(10)}(${'x'.repeat(120)})`, null],
  ]);
  assert.equal(parseFeedDate(undefined), null);
  assert.equal(parseFeedDate(null), null);
});

test('any input returns null or a canonical UTC timestamp, never throws', () => {
  // Deterministic fuzz: valid dates with fragments of date syntax inserted, replaced or cut.
  const seeds = [
    'Thu, 01 Jan 2004 19:48:21 GMT',
    '2003-12-31T10:14:55.123+01:00',
    'Mon, 26 July 2004 16:31:00 PT',
    'Sun Jul 15 01:16:00 +0000 2012',
    'Nov. 16, 2020, 10:57 a.m. EST',
    'Fri, 31 Mar 2023 20:19:00 America/Los_Angeles',
    '9999-12-31T23:59:59Z',
  ];
  const parts = [
    '2004',
    '-',
    '01',
    ':',
    ' ',
    'T',
    'Z',
    '+',
    '05',
    'Jan',
    ',',
    'Mon',
    'GMT',
    'PM',
    '.',
    '/',
    '31',
    '99',
    'ET',
    'Europe/Paris',
    'x',
    '(',
    ')',
    '年',
    '\u0000',
    '9',
    '24',
    '60',
    "'",
  ];
  let seed = 42;
  const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  for (let i = 0; i < 20_000; i++) {
    let s = seeds[next(seeds.length)]!;
    for (let j = next(4); j >= 0; j--) {
      const at = next(s.length + 1);
      const cut = next(3);
      s = s.slice(0, at) + (next(4) ? parts[next(parts.length)] : '') + s.slice(at + cut);
    }
    const out = parseFeedDate(s);
    if (out !== null) assert.match(out, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, s);
  }
});
