// make bench-rss2email: feedsub against rss2email (Debian's package, `apt-get install -y rss2email`) on the same local
// origin and machine, one after the other: PEER_FEEDS feeds (default 1,000) of ~50 KB, half RSS, half Atom
// (scripts/bench-origin.ts), each read by one feedsub subscription and one rss2email feed. Three rounds, each timed
// from the start of the process to its exit:
//   first poll   feedsub `poll --once` takes every feed's baseline (sends nothing); rss2email `run --no-send` marks
//                every entry seen (sends nothing), as its users start;
//   changed      30.5 % of the feeds gain 2 entries each: feedsub's poll --once sends each changed feed's new entries
//                in one signed webhook to the origin's receivers, rss2email's run hands each entry to sendmail (a sink
//                script that keeps its Subject line). Both must send exactly the new entries, none twice, or the bench
//                exits 1;
//   unchanged    nothing changed: every feed answers 304 to both.
// The origin is warmed first (every body rendered once), so neither pays for its rendering. rss2email fetches one feed
// at a time, as it does; feedsub at its default poll concurrency (16) with the per-host cap raised to it, as for feeds on
// many hosts (every feed here is on the origin's).
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createTable } from './bench/table.ts';
import { pollOnce, runCommand, startOrigin, type PollRun } from './bench-scale/processes.ts';
import { sqliteStore } from './bench-scale/store.ts';
import { buildWorld, writeConfig } from './bench-scale/world.ts';
import { freePort } from '../test/support/daemon.ts';

const FEEDS = Number(process.env.PEER_FEEDS ?? 1000);
/** The share of feeds the changed round changes, and the entries each gains. */
const CHANGED = 0.305;
const ADD = 2;
const R2E = '/usr/bin/r2e';
/** What a service runs (make build), when it was built; else the sources under tsx (whose loader adds seconds to a
 *  process's start). */
const BUILT = new URL('../dist/feedsub', import.meta.url).pathname;
const EXECUTABLE = existsSync(BUILT) ? BUILT : undefined;
/** Each round's longest run, either program. */
const ROUND_MAX_MS = 15 * 60_000;

async function main(): Promise<void> {
  if (!existsSync(R2E))
    throw new Error('bench-rss2email: rss2email is not installed (apt-get install -y rss2email)');
  if (!Number.isInteger(FEEDS) || FEEDS < 1)
    throw new Error('bench-rss2email: PEER_FEEDS must be a positive integer');
  const dir = mkdtempSync(join(tmpdir(), 'feedsub-peer-'));
  const origin = await startOrigin(FEEDS, 'large');
  const table = createTable();
  const row = (what: string, value: string, note: string) => {
    const noted = `${note}; load ${loadavg()[0]!.toFixed(1)}`;
    console.error(`bench-rss2email: ${what}: ${value} (${noted})`);
    table.row(what, value, noted);
  };
  try {
    // bench-scale's config: poll concurrency 16 and a per-host cap of 16, since every feed here is on one host.
    const configFile = writeConfig(dir, await freePort());
    await buildWorld(
      dir,
      configFile,
      sqliteStore(join(dir, 'data', 'feedsub.db')),
      origin.base,
      FEEDS,
      1,
    );
    const r2e = setUpRss2email(join(dir, 'r2e'), origin.base);
    await warm(origin.base);

    const compare = (what: string, feedsub: PollRun, peer: number, note: string) =>
      row(
        what,
        `${(peer / feedsub.ms).toFixed(1)}× faster`,
        `feedsub ${(feedsub.ms / 1000).toFixed(1)} s (peak RSS ${feedsub.peakMiB.toFixed(0)} MiB), rss2email ${(peer / 1000).toFixed(1)} s; ${note}`,
      );

    const first = await feedsubRound(configFile);
    const firstPeer = await r2e.run(['run', '--no-send']);
    compare('first poll (baseline, nothing sent)', first, firstPeer, first.summary);

    const changed = await newRound(origin.base);
    await warm(origin.base);
    const second = await feedsubRound(configFile);
    const ids = (await (await request(`${origin.base}/_ids`)).body.json()) as {
      ids: number;
      twice: number;
    };
    const secondPeer = await r2e.run(['run']);
    const subjects = r2e.subjects();
    const expected = changed * ADD;
    const unique = new Set(subjects).size;
    // feedsub sends one event per changed feed and subscription, holding the feed's new entries.
    const entries = Number(/new entries (\d+)/.exec(second.summary)?.[1]);
    const delivered = Number(/events delivered (\d+)/.exec(second.summary)?.[1]);
    compare(
      `${changed} feeds gained ${expected} entries`,
      second,
      secondPeer,
      `feedsub sent ${entries} entries in ${ids.ids} webhooks (${ids.twice} twice), rss2email ${subjects.length} mails (${subjects.length - unique} twice); ${second.summary}`,
    );
    if (
      entries !== expected ||
      delivered !== changed ||
      ids.ids !== changed ||
      ids.twice !== 0 ||
      subjects.length !== expected ||
      unique !== expected
    )
      throw new Error(
        `bench-rss2email: expected ${expected} new entries sent once each: feedsub sent ${entries} in ${ids.ids} webhooks (${ids.twice} twice, ${delivered} delivered), rss2email ${subjects.length} mails (${subjects.length - unique} twice)`,
      );

    const third = await feedsubRound(configFile);
    const thirdPeer = await r2e.run(['run']);
    compare('nothing changed (every feed 304)', third, thirdPeer, third.summary);
    if (r2e.subjects().length !== expected)
      throw new Error('bench-rss2email: rss2email sent mail when nothing changed');
  } finally {
    await origin.process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  table.print(
    `\nfeedsub (${EXECUTABLE ? 'the built executable, dist/feedsub' : 'node --import tsx src/main.ts'}) against rss2email: ${FEEDS.toLocaleString('en')} feeds of ~50 KB (half RSS, half Atom) on one local origin, node ${process.version}\n`,
  );
}

/** One feedsub `poll --once` over every feed; throws when it fails. */
async function feedsubRound(configFile: string): Promise<PollRun> {
  const run = await pollOnce(configFile, ROUND_MAX_MS, EXECUTABLE);
  if (run.code !== 0) throw new Error(`bench-rss2email: poll --once exited ${run.code}`);
  return run;
}

/** rss2email's configuration and data in `dir`: one feed per origin feed, mail handed to a sendmail that keeps each
 *  message's Subject line. `run(args)` runs r2e to its exit and resolves with its time; `subjects()` reads what was
 *  sent so far. */
function setUpRss2email(dir: string, base: string) {
  mkdirSync(dir);
  const config = join(dir, 'r2e.cfg');
  const data = join(dir, 'r2e.json');
  const sent = join(dir, 'sent.txt');
  const sendmail = join(dir, 'sendmail');
  writeFileSync(sent, '');
  // Reads the whole message (as a mail server does) and keeps its first Subject line.
  writeFileSync(sendmail, `#!/bin/sh\nawk '/^Subject:/ && !s { print; s = 1 }' >> '${sent}'\n`);
  chmodSync(sendmail, 0o755);
  writeFileSync(
    config,
    `[DEFAULT]\nto = bench@example.com\nfrom = feeds@example.com\nemail-protocol = sendmail\nsendmail = ${sendmail}\nverbose = warning\n\n`,
  );
  for (let n = 0; n < FEEDS; n++)
    appendFileSync(config, `[feed.f${n}]\nurl = ${base}/feeds/${n}.xml\n\n`);
  return {
    run: (args: string[]) => timed(['-c', config, '-d', data, ...args]),
    subjects: () => readFileSync(sent, 'utf8').split('\n').filter(Boolean),
  };
}

/** Runs r2e with `args` to its exit (at most ROUND_MAX_MS) and resolves with its time; throws with its stderr when it
 *  fails. */
async function timed(args: string[]): Promise<number> {
  const run = await runCommand(R2E, args, ROUND_MAX_MS);
  if (run.code !== 0)
    throw new Error(
      `bench-rss2email: r2e ${args.join(' ')} exited ${run.code}\n${run.stderr.slice(-8000)}`,
    );
  return run.ms;
}

/** The origin's round: the share CHANGED of the feeds gains ADD entries each; how many feeds changed. */
async function newRound(base: string): Promise<number> {
  const r = await request(`${base}/_round?change=${CHANGED}&add=${ADD}`, { method: 'POST' });
  return ((await r.body.json()) as { changed: number }).changed;
}

/** Fetches every feed once, 16 at a time, so the origin has rendered each body before either program reads it. */
async function warm(base: string): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < FEEDS) {
        const n = next++;
        await (await request(`${base}/feeds/${n}.xml`)).body.dump();
      }
    }),
  );
}

await main();
