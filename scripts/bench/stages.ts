// make bench, where a changed document's time goes: V8 CPU profiles (node:inspector) of one more all-changed round (one
// new entry in each document), each sample's time put in one stage by the file or package its function is in. The
// parse thread's: the round's bodies read as a parse thread reads them (feed/parse/read-document.ts, against what each
// feed's history holds), here, one after another. The main thread's: this process while the round is polled (the parse
// threads are other threads, not in it). Profiling slows what it watches, so these rounds are never the timed ones; the
// shares are what the table is for.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PARSER_VERSION } from '../../src/feed/parse/parse.ts';
import { readDocument, type DocumentRequest } from '../../src/feed/parse/read-document.ts';
import { knownEntries } from '../../src/store/entry-history.ts';
import { pollTick } from '../../src/worker/poll/round.ts';
import { fetchBodies } from './raw.ts';
import type { Bench } from './setup.ts';

/** A stage: its name and whether a frame belongs to it (by its script's URL, then its function's name). */
type Stage = { name: string; test: (url: string, fn: string) => boolean };
const src =
  (...paths: string[]) =>
  (url: string) =>
    paths.some((p) => url.includes(`/src/${p}`));
const pkg =
  (...names: string[]) =>
  (url: string) =>
    names.some((n) => url.includes(`/node_modules/${n}/`));

const PARSE_STAGES: Stage[] = [
  {
    name: 'decode (charset)',
    test: (u) => src('feed/parse/decode')(u) || pkg('iconv-lite', 'jschardet')(u),
  },
  { name: 'XML clean-up and repair', test: src('feed/parse/xml-') },
  {
    name: 'feedsmith (fast-xml-parser)',
    test: pkg(
      'feedsmith',
      'fast-xml-parser',
      'strnum',
      'path-expression-matcher',
      '@nodable',
      'anynum',
    ),
  },
  {
    name: 'HTML sanitizing (sanitize-html, htmlparser2)',
    test: pkg(
      'sanitize-html',
      'htmlparser2',
      'domhandler',
      'domutils',
      'dom-serializer',
      'entities',
      'parse-srcset',
      'postcss',
      'nanoid',
      'is-plain-object',
      'deepmerge',
      'escape-string-regexp',
      'launder',
    ),
  },
  {
    name: 'entry text and HTML (ours)',
    test: src('feed/parse/entry-text', 'feed/parse/entry-html'),
  },
  {
    name: 'mapping to entries (formats, values, URLs)',
    test: src(
      'feed/parse/formats',
      'feed/parse/entry.ts',
      'feed/parse/extensions',
      'feed/parse/values',
      'feed/parse/urls',
      'feed/parse/parse.ts',
    ),
  },
  { name: 'dates', test: src('feed/parse/dates') },
  { name: 'keys and content hashes', test: src('feed/identity/') },
  { name: 'packing entries (serialize), slim', test: src('feed/entry-list', 'feed/slim') },
  { name: 'reading the document (sniff, known entries)', test: src('feed/parse/read-document') },
  {
    name: 'reply (structured clone)',
    test: (u, fn) => u.includes('/scripts/bench/stages') && fn === 'cloneReply',
  },
];
const MAIN_STAGES: Stage[] = [
  {
    name: 'fetch (undici, HTTP)',
    test: (u) =>
      pkg('undici')(u) || src('feed/fetch/', 'net/')(u) || u.startsWith('node:internal/'),
  },
  { name: 'reading packed entries', test: src('feed/entry-list') },
  { name: 'keys and plans', test: src('actions/ingest/', 'feed/identity/') },
  { name: 'entry history', test: src('actions/entry-history', 'store/entry-history') },
  {
    name: 'events (bodies, sequences)',
    test: src('webhook/', 'actions/entry-events', 'actions/filter', 'feed/filter/'),
  },
  {
    name: 'SQL (better-sqlite3, pg, store)',
    test: (u) =>
      pkg('better-sqlite3', 'pg', 'pg-protocol', 'bindings')(u) || src('store/', 'db/')(u),
  },
  {
    name: 'the pool and the record (worker/, actions/)',
    test: src('worker/', 'actions/', 'context.ts'),
  },
  { name: 'parse pool (hand-off)', test: src('feed/parse/pool') },
];

type Node = { id: number; callFrame: { functionName: string; url: string }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

/** Adds the two stage tables of one more all-changed round (one new entry in each document): ms per document of each
 *  stage on each thread. */
export async function measureStages(b: Bench): Promise<void> {
  await b.round('change=1&add=1');
  const { bodies } = await fetchBodies(b.base);
  // Each document with what its feed's history holds, as the poller sends it: only its new entry is rendered.
  const requests: DocumentRequest[] = [];
  for (const [i, body] of bodies.entries()) {
    const r = request(b.base, i, body);
    const id = await b.ctx.db.value('SELECT id FROM feeds WHERE url = ?', [r.keyBase]);
    requests.push({ ...r, known: await knownEntries(b.ctx.db, id as string, PARSER_VERSION) });
  }
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    readAll(requests.slice(0, 50)); // compiled before the profile
    await session.post('Profiler.start');
    const t = performance.now();
    readAll(requests);
    const readMs = performance.now() - t;
    const parse = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    keep(b, 'parse', parse.profile);
    report(b, 'parse thread', stageTimes(parse.profile, PARSE_STAGES), bodies.length, readMs);

    // The same round polled: the fetches, the hand-off to the parse threads and the records, on this thread.
    await session.post('Profiler.start');
    const t2 = performance.now();
    const { summary } = await pollTick(b.ctx, b.workers.pollerDeps, { all: true });
    const pollMs = performance.now() - t2;
    const main = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    keep(b, 'main', main.profile);
    report(b, 'main thread', stageTimes(main.profile, MAIN_STAGES), summary.fetched, pollMs);
  } finally {
    session.disconnect();
  }
}

/** Writes a profile to BENCH_PROFILE_DIR, when set, as `<engine>-<thread>.cpuprofile` (Chrome DevTools and
 *  speedscope open it): the stage tables say how much, the profile says which function. */
function keep(b: Bench, thread: string, profile: Profile): void {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${b.ctx.db.dialect}-${thread}.cpuprofile`), JSON.stringify(profile));
}

function request(base: string, i: number, body: string): DocumentRequest {
  const url = `${base}/feeds/${i}.xml`;
  return {
    bytes: new TextEncoder().encode(body),
    contentType: i % 2 === 0 ? 'application/rss+xml' : 'application/atom+xml',
    mode: 'feed',
    parse: { baseUrl: url },
    keyBase: url,
  };
}

// Each document read as a parse thread reads it, its reply cloned as postMessage clones it (the entries' buffers move).
function readAll(requests: DocumentRequest[]): void {
  for (const r of requests) cloneReply(readDocument({ ...r, bytes: r.bytes.slice() }));
}

function cloneReply(reply: ReturnType<typeof readDocument>): unknown {
  return reply.kind === 'feed' ? structuredClone({ ...reply, entries: null }) : null;
}

/** Each stage's ms in `profile` (a frame without a stage of its own, a built-in such as JSON.stringify, counts for the
 *  nearest caller that has one), and the collector's, idle and the rest. */
function stageTimes(profile: Profile, stages: Stage[]): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOf = new Map<number, string>();
  const find = (id: number): string => {
    const known = stageOf.get(id);
    if (known !== undefined) return known;
    const { functionName: fn, url } = byId.get(id)!.callFrame;
    let name: string;
    if (fn === '(garbage collector)') name = 'garbage collection';
    else if (fn === '(idle)') name = 'idle';
    else if (fn === '(program)' || fn === '(root)') name = 'other (V8, native)';
    else {
      // A built-in (no URL) or Node's own code (node:…) that no stage names counts for its caller.
      const stage = url === '' ? undefined : stages.find((s) => s.test(url, fn));
      const inherits = url === '' || url.startsWith('node:');
      const up = parent.get(id);
      if (stage !== undefined) name = stage.name;
      else if (inherits && up !== undefined) name = find(up);
      else name = url === '' ? 'other (V8, native)' : 'other';
    }
    stageOf.set(id, name);
    return name;
  };
  const ms = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const name = find(id);
    ms.set(name, (ms.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return ms;
}

function report(
  b: Bench,
  thread: string,
  ms: Map<string, number>,
  documents: number,
  wallMs: number,
): void {
  const busy = [...ms].filter(([name]) => name !== 'idle').reduce((n, [, v]) => n + v, 0);
  b.row(
    `changed document, ${thread}: CPU per document`,
    `${(busy / documents).toFixed(2)} ms`,
    `${documents} documents in ${(wallMs / 1000).toFixed(1)} s under V8's sampling profiler (slower than unprofiled); by stage below`,
  );
  for (const [name, v] of [...ms].sort((x, y) => y[1] - x[1])) {
    if (name === 'idle') continue;
    b.row(
      `  ${thread}: ${name}`,
      `${(v / documents).toFixed(3)} ms`,
      `${((v / busy) * 100).toFixed(1)} %`,
    );
  }
}
