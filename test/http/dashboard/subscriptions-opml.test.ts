// The subscriptions page's OPML import (a file or pasted text, multipart with its CSRF token) and export through
// app.request(): the results page, errors beside their fields, and the download.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readOpmlFeeds } from '../../../src/feed/opml.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { assertLabelled, Client, errorBeside, textareaValue, type Page } from './client.ts';

let w: World;
before(() => {
  w = makeWorld();
});
after(() => w.close());

const opml = (outlines: string) =>
  `<?xml version="1.0"?>\n<opml version="2.0">\n<head/>\n<body>\n${outlines}\n</body>\n</opml>\n`;

async function setup(): Promise<{ c: Client; key: string; endpoint: string }> {
  const { key } = await w.key();
  const c = await new Client(w).signedIn(key);
  const endpoint = (
    await w.call('POST', '/v1/endpoints', {
      key,
      body: { title: 'Receiver', url: 'http://127.0.0.1:9/hook' },
    })
  ).body.id as string;
  await c.get('/dashboard/subscriptions');
  return { c, key, endpoint };
}

/** POSTs the import form as a browser does: multipart/form-data, the session cookie, the page's CSRF token. */
async function postImport(
  c: Client,
  fields: Record<string, string>,
  file?: { bytes: Uint8Array | string; name: string },
  opts: { csrf?: boolean } = {},
): Promise<Page> {
  const form = new FormData();
  if (opts.csrf !== false) form.set('_csrf', c.csrf);
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set(
    'file',
    file ? new Blob([file.bytes], { type: 'text/x-opml' }) : new Blob([]),
    file?.name ?? '',
  );
  const res = await w.app.request(
    'http://localhost/dashboard/subscriptions/import',
    {
      method: 'POST',
      headers: { cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      body: form,
    },
    { incoming: { socket: { remoteAddress: '192.0.2.1' } } },
  );
  return {
    status: res.status,
    text: await res.text(),
    headers: res.headers,
    location: res.headers.get('location'),
    setCookies: [],
  };
}

async function urlsOf(key: string, endpoint: string): Promise<string[]> {
  const res = await w.call('GET', `/v1/subscriptions?endpoint=${endpoint}`, { key });
  return (res.body.data as { url: string }[]).map((s) => s.url).sort();
}

describe('dashboard OPML import', () => {
  it('offers a labelled multipart import form with its CSRF token, and the export', async () => {
    const { c, endpoint } = await setup();
    const page = await c.get('/dashboard/subscriptions');
    assertLabelled(page.text);
    const form =
      /<form method="post" action="\/dashboard\/subscriptions\/import"[^>]*>[\s\S]*?<\/form>/.exec(
        page.text,
      )?.[0];
    assert.ok(form, 'the page has the import form');
    assert.match(form, /enctype="multipart\/form-data"/);
    assert.match(form, /name="_csrf" value="[^"]+"/);
    assert.match(form, /<input id="import-file" name="file" type="file"/);
    assert.match(form, new RegExp(`<option value="${endpoint}">`));
    assert.match(page.text, /<a href="\/dashboard\/subscriptions\/export">Export OPML<\/a>/);
    assert.match(page.text, /<form method="get" action="\/dashboard\/subscriptions\/export"/);
  });

  it('imports pasted OPML and shows a row per feed: created ones linked, the others with the reason', async () => {
    const { c, key, endpoint } = await setup();
    const res = await postImport(c, {
      endpoint,
      opml: opml(
        '<outline text="Folder"><outline text="One" xmlUrl="http://127.0.0.1:9/one.xml"/></outline>\n<outline text="Bad" xmlUrl="feed.xml"/>',
      ),
      metadata: '{"list": "mine"}',
    });
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /1 created, 0 already subscribed, 1 invalid, 0 refused\./);
    const [id] = (await w.call('GET', `/v1/subscriptions?endpoint=${endpoint}`, { key })).body
      .data as { id: string }[];
    assert.ok(id);
    assert.match(res.text, new RegExp(`href="/dashboard/subscriptions/${id.id}"`));
    assert.match(res.text, /<span class="badge active">created<\/span>/);
    assert.match(res.text, /<span class="badge error">invalid<\/span>/);
    assert.match(res.text, /must be an absolute http or https URL/);
    const got = await w.call('GET', `/v1/subscriptions/${id.id}`, { key });
    assert.deepEqual(got.body.metadata, { list: 'mine' });
  });

  it('imports an uploaded file, decoded by its XML declaration, in preference to pasted text', async () => {
    const { c, key, endpoint } = await setup();
    const latin1 = Buffer.from(
      '<?xml version="1.0" encoding="ISO-8859-1"?><opml version="1.0"><body><outline text="Caf\xe9" xmlUrl="http://127.0.0.1:9/cafe.xml"/></body></opml>',
      'latin1',
    );
    const res = await postImport(
      c,
      { endpoint, opml: opml('<outline xmlUrl="http://127.0.0.1:9/pasted.xml"/>') },
      { bytes: latin1, name: 'feeds.opml' },
    );
    assert.equal(res.status, 200, res.text);
    assert.match(res.text, /Café/);
    assert.deepEqual(await urlsOf(key, endpoint), ['http://127.0.0.1:9/cafe.xml']);
  });

  it('shows a document it cannot read beside the field it came from, with every other error, creating nothing', async () => {
    const { c, key, endpoint } = await setup();
    const cut = opml('<outline xmlUrl="http://127.0.0.1:9/a.xml"/>').slice(0, -10);
    const pasted = await postImport(c, { endpoint: '', opml: cut, metadata: '' });
    assert.equal(pasted.status, 400);
    assert.equal(errorBeside(pasted.text, 'import-endpoint'), 'choose an endpoint');
    assert.match(errorBeside(pasted.text, 'import-opml')!, /is it cut short\?$/);
    // A multipart form sends line breaks as CRLF (HTML §4.10.21.8).
    assert.equal(textareaValue(pasted.text, 'import-opml')?.replace(/\r\n/g, '\n'), cut);
    const uploaded = await postImport(
      c,
      { endpoint, metadata: '{"a": ' },
      { bytes: '<rss version="2.0"/>', name: 'feed.xml' },
    );
    assert.equal(uploaded.status, 400);
    assert.match(errorBeside(uploaded.text, 'import-metadata')!, /^must be valid JSON/);
    const again = await postImport(c, { endpoint }, { bytes: '<rss version="2.0"/>', name: 'f' });
    assert.equal(
      errorBeside(again.text, 'import-file'),
      'is not an OPML document: its root element is <rss>, not <opml>',
    );
    const empty = await postImport(c, { endpoint, opml: '  ' });
    assert.equal(errorBeside(empty.text, 'import-opml'), 'choose a file or paste an OPML document');
    assert.deepEqual(await urlsOf(key, endpoint), []);
  });

  it("refuses an import without the CSRF token, and one into another application's endpoint", async () => {
    const { c, key, endpoint } = await setup();
    const doc = opml('<outline xmlUrl="http://127.0.0.1:9/csrf.xml"/>');
    assert.equal(
      (await postImport(c, { endpoint, opml: doc }, undefined, { csrf: false })).status,
      403,
    );
    const foreign = await setup();
    assert.equal((await postImport(c, { endpoint: foreign.endpoint, opml: doc })).status, 404);
    assert.deepEqual(await urlsOf(key, endpoint), []);
    assert.deepEqual(await urlsOf(foreign.key, foreign.endpoint), []);
  });
});

describe('dashboard OPML export', () => {
  it("downloads the application's subscriptions, or one endpoint's, as OPML", async () => {
    const { c, key, endpoint } = await setup();
    const other = (
      await w.call('POST', '/v1/endpoints', {
        key,
        body: { title: 'Other', url: 'http://127.0.0.1:9/other' },
      })
    ).body.id as string;
    for (const [e, url] of [
      [endpoint, 'http://127.0.0.1:9/e1.xml'],
      [other, 'http://127.0.0.1:9/e2.xml'],
    ] as const)
      await w.call('POST', '/v1/subscriptions', { key, body: { endpoint: e, url } });
    await w.call('POST', '/v1/subscriptions', {
      key: (await setup()).key,
      body: { endpoint: (await setup()).endpoint, url: 'http://127.0.0.1:9/not-mine.xml' },
    });
    const all = await c.get('/dashboard/subscriptions/export');
    assert.equal(all.status, 200);
    assert.equal(all.headers.get('content-type'), 'text/x-opml; charset=utf-8');
    assert.match(all.headers.get('content-disposition') ?? '', /^attachment;/);
    assert.deepEqual(
      readOpmlFeeds(all.text, 1000)
        .map((f) => f.xmlUrl)
        .sort(),
      ['http://127.0.0.1:9/e1.xml', 'http://127.0.0.1:9/e2.xml'],
    );
    const one = await c.get(`/dashboard/subscriptions/export?endpoint=${other}`);
    assert.deepEqual(
      readOpmlFeeds(one.text, 1000).map((f) => f.xmlUrl),
      ['http://127.0.0.1:9/e2.xml'],
    );
    const foreign = await setup();
    assert.equal(
      (await c.get(`/dashboard/subscriptions/export?endpoint=${foreign.endpoint}`)).status,
      404,
    );
    assert.equal((await new Client(w).get('/dashboard/subscriptions/export')).status, 303);
  });
});
