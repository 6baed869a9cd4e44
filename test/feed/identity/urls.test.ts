// The URLs entries are known by: tracking parameters stripped, enclosures without their query, links keyed against the
// subscribed URL after a redirect.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  enclosureIdentity,
  isTrackingParam,
  linkKeyer,
  stripTracking,
} from '../../../src/feed/identity/urls.ts';

test('tracking parameters and session ids are stripped; parameters that name content are kept', () => {
  const cases: [string, string, string][] = [
    [
      'Google Analytics campaign',
      'https://x.org/p?utm_source=rss&utm_medium=feed',
      'https://x.org/p',
    ],
    ['a content id survives', 'https://x.org/?p=123&utm_campaign=z', 'https://x.org/?p=123'],
    ['click ids anywhere', 'https://x.org/a?fbclid=IwAR0&id=7&gclid=Cj0', 'https://x.org/a?id=7'],
    ['Mailchimp', 'https://x.org/a?mc_cid=1&mc_eid=2', 'https://x.org/a'],
    ['HubSpot', 'https://x.org/a?_hsenc=p2A&_hsmi=9&x=1', 'https://x.org/a?x=1'],
    ['names are compared case-insensitively', 'https://x.org/a?UTM_Source=x', 'https://x.org/a'],
    ['percent-encoded names too', 'https://x.org/a?utm%5Fsource=x&b=2', 'https://x.org/a?b=2'],
    ['PHP session', 'https://x.org/a?PHPSESSID=abc&page=2', 'https://x.org/a?page=2'],
    [
      'Java session as a path parameter',
      'https://x.org/a;jsessionid=A1B2?x=1',
      'https://x.org/a?x=1',
    ],
    ['Java session in the query', 'https://x.org/a?jsessionid=A1B2', 'https://x.org/a'],
    ['ASP session prefix', 'https://x.org/a?ASPSESSIONIDQA=1&k=v', 'https://x.org/a?k=v'],
    ['a tracking-only fragment', 'https://x.org/a#xtor=RSS-1', 'https://x.org/a'],
    ['a real fragment stays', 'https://x.org/changelog#v1.2', 'https://x.org/changelog#v1.2'],
    ['a fragment with other parameters stays', 'https://x.org/a#page=2', 'https://x.org/a#page=2'],
    ['ref identifies a branch', 'https://git.x.org/r?ref=main', 'https://git.x.org/r?ref=main'],
    [
      'sid is a story id on some sites',
      'https://x.org/article.pl?sid=05/12/30',
      'https://x.org/article.pl?sid=05/12/30',
    ],
    ['source and id stay', 'https://x.org/v?source=3&id=4', 'https://x.org/v?source=3&id=4'],
    [
      'nothing to strip: byte for byte',
      'https://x.org/a?b=1&&c=%20&',
      'https://x.org/a?b=1&&c=%20&',
    ],
    ['an empty query as written', 'https://x.org/a?', 'https://x.org/a?'],
    ['no query at all', 'https://x.org/a', 'https://x.org/a'],
  ];
  for (const [name, input, expected] of cases) assert.equal(stripTracking(input), expected, name);
});

test('the tracking list leaves content-like names alone', () => {
  for (const name of ['id', 'p', 'page', 'ref', 'sid', 'session', 'source', 'q', 'v', 'utm'])
    assert.equal(isTrackingParam(name), false, name);
  for (const name of ['utm_term', 'mtm_kwd', 'hsa_cam', 'igshid', 'msclkid', 'yclid', '_ga'])
    assert.equal(isTrackingParam(name), true, name);
});

test('an enclosure is known by scheme, host and path, whatever tokens its query carries', () => {
  const cases: [string, string, string][] = [
    ['CDN token', 'https://cdn.x.org/ep/12.mp3?token=abc&expires=1', 'https://cdn.x.org/ep/12.mp3'],
    ['signed URL', 'https://s3.x.org/b/12.mp3?X-Amz-Signature=ff', 'https://s3.x.org/b/12.mp3'],
    ['port kept', 'http://x.org:8080/a.mp3#t=10', 'http://x.org:8080/a.mp3'],
    ['no query', 'https://x.org/a.mp3', 'https://x.org/a.mp3'],
  ];
  for (const [name, input, expected] of cases)
    assert.equal(enclosureIdentity(input), expected, name);
});

test('a link on the host a redirect led to is keyed on the subscribed origin', () => {
  const cases: [string, [string, string, string], string | null][] = [
    [
      'relative link resolved on the new host',
      ['https://new.x.org/posts/1', 'https://old.x.org/feed', 'https://new.x.org/feed.xml'],
      'https://old.x.org/posts/1',
    ],
    [
      'http to https keeps the subscribed scheme',
      ['https://x.org/p?a=1', 'http://x.org/feed', 'https://x.org/feed'],
      'http://x.org/p?a=1',
    ],
    [
      'no redirect: nothing to do',
      ['https://x.org/p', 'https://x.org/feed', 'https://x.org/feed'],
      null,
    ],
    [
      'a link to a third host is left alone',
      ['https://elsewhere.org/p', 'https://old.x.org/feed', 'https://new.x.org/feed'],
      null,
    ],
    [
      'a redirect within the origin changes nothing',
      ['https://x.org/p', 'https://x.org/feed', 'https://x.org/v2/feed'],
      null,
    ],
  ];
  for (const [name, [link, base, fetched], expected] of cases)
    assert.equal(linkKeyer(base, fetched)(link), expected, name);
});
