// Switching a churning feed's identity: the probe of the last good document and the choice of a stable source.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entryIdentities } from '../../../src/feed/identity/keys.ts';
import { identityProbe, readProbe, stableSource } from '../../../src/feed/identity/switch.ts';
import type { Entry } from '../../../src/feed/types.ts';
import { entry } from '../../support/identity.ts';

const BASE = { keyBase: 'https://x.org/feed', documentUrl: 'https://x.org/feed' };
const ids = (entries: Entry[]) => entryIdentities(entries, BASE);
const range = (n: number, f: (i: number) => Entry) => Array.from({ length: n }, (_, i) => f(i));

test('the probe holds, per source after the current one, a short key for each entry', () => {
  const doc = ids(
    range(3, (i) => entry({ guid: `g${i}`, url: `https://x.org/${i}`, title: `T${i}` })),
  );
  const probe = identityProbe(doc, 'guid');
  assert.deepEqual(Object.keys(probe), ['link', 'enclosure', 'content']);
  assert.equal(probe.link!.length, 3);
  for (const k of probe.link!) assert.match(k, /^[0-9a-f]{16}$/);
  assert.deepEqual(Object.keys(identityProbe(doc, 'link')), ['enclosure', 'content']);
  assert.deepEqual(identityProbe(doc, 'content'), {});
  assert.deepEqual(readProbe(JSON.stringify(probe)), probe, 'stored as JSON and read back');
});

test('an unreadable stored probe is no probe', () => {
  for (const text of [null, '', 'not json', '[]', '{"link": "x"}', '{"link": [1, 2]}'])
    assert.deepEqual(readProbe(text), {}, String(text));
});

test('the stable source is the first later one that kept its keys and tells the entries apart', () => {
  const good = range(12, (i) =>
    entry({ guid: `old-${i}`, url: `https://x.org/${i}`, title: `T${i}`, content: `c${i}` }),
  );
  const probe = identityProbe(ids(good), 'guid');
  const rotated = (n: number) => good.map((e, i) => ({ ...e, guid: `rot-${n}-${i}` }));
  const cases: [string, Entry[], ReturnType<typeof stableSource>][] = [
    ['guids rotate, links stay: link', rotated(1), 'link'],
    [
      'two new entries on top still count as stable',
      [
        entry({ guid: 'n1', url: 'https://x.org/new1', title: 'N1' }),
        entry({ guid: 'n2', url: 'https://x.org/new2', title: 'N2' }),
        ...rotated(2).slice(0, 10),
      ],
      'link',
    ],
    [
      'links rotate too (a session in the path), content stays: content',
      rotated(3).map((e, i) => ({ ...e, url: `https://x.org/s${i}/session-${Math.random()}` })),
      'content',
    ],
    [
      'every entry on one link: that is no identity, content is',
      rotated(4).map((e) => ({ ...e, url: 'https://x.org/' })),
      'content',
    ],
    [
      'everything changed: nothing is stable',
      range(12, (i) => entry({ guid: `z${i}`, url: `https://y.org/${i}`, title: `Z${i}` })),
      null,
    ],
  ];
  for (const [name, doc, expected] of cases)
    assert.equal(stableSource(ids(doc), 'guid', probe), expected, name);
  assert.equal(
    stableSource(ids(rotated(5)), 'guid', {}),
    null,
    'no probe: nothing to compare with',
  );
  assert.equal(stableSource([], 'guid', probe), null, 'an empty document decides nothing');
});
