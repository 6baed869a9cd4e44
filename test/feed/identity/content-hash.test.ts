// The content hash tells a new version of an entry from the stored one: its value is stored, so it never changes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { contentHash } from '../../../src/feed/identity/content-hash.ts';
import { entry } from '../../support/identity.ts';

describe('content hash', () => {
  it('hashes the title, summary, content and updated date exactly as stored hashes were made', () => {
    // sha256 of the JSON array [title, summary_html, content_html, updated_at], hex, first 32 characters.
    assert.equal(
      contentHash(
        entry({
          title: 'Title',
          summary_html: '<p>Summary</p>',
          updated_at: '2026-01-02T03:04:05.000Z',
        }),
      ),
      'fddbfaafd45c24e0746e8b162dd6c094',
    );
    assert.equal(contentHash(entry()), '6cd8cec706fa11110d83fb46f97df1f9');
  });

  it('ignores what is not an update: link, image, categories, authors, enclosures, plain text', () => {
    const base = entry({ title: 'T', content_html: '<p>x</p>' });
    assert.equal(
      contentHash({
        ...base,
        url: 'https://example.com/other',
        image: 'https://example.com/i.png',
        categories: ['c'],
        authors: ['a'],
        enclosures: [{ url: 'https://example.com/a.mp3', type: null, length: null }],
        content_text: 'x',
      }),
      contentHash(base),
    );
    assert.notEqual(contentHash({ ...base, title: 'T2' }), contentHash(base));
  });
});
