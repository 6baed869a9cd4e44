// A feed's health as the poller knows it: what is fetched, when, and what went wrong (the subscription page shows it).
import type { FeedView } from '../../actions/feeds.ts';
import { Badge, Fact, Time } from './components.tsx';

/** How each identity source reads on the page. */
const IDENTITY_LABELS: Record<FeedView['identity_key'], string> = {
  guid: 'guid (then link, enclosure, content)',
  link: 'link (then enclosure, content)',
  enclosure: 'enclosure (then content)',
  content: 'title, content and date',
};

const seconds = (n: number | null) =>
  n === null ? '—' : n % 3600 === 0 ? `${n / 3600} h` : n % 60 === 0 ? `${n / 60} min` : `${n} s`;

/** What is fetched: the status, the title, the URL fetched and the one discovered behind it. */
function FeedSource(p: { f: FeedView }) {
  const f = p.f;
  return (
    <>
      <Fact label="Status">
        <Badge status={f.status} />
      </Fact>
      <Fact label="Title">{f.title ?? <span class="muted">not fetched yet</span>}</Fact>
      <Fact label="Fetched URL" class="mono">
        {f.feed_url}
      </Fact>
      <Fact label="Discovered URL" class="mono">
        {f.discovered_url ?? <span class="muted">none (the URL is the feed itself)</span>}
      </Fact>
    </>
  );
}

/** When it was polled and will be next, and what the last poll got. */
function FeedSchedule(p: { f: FeedView }) {
  const f = p.f;
  return (
    <>
      <Fact label="Last poll">
        <Time at={f.last_polled_at} empty="not polled yet" />
      </Fact>
      <Fact label="Last success">
        <Time at={f.last_success_at} empty="never" />
      </Fact>
      <Fact label="Next poll">
        <Time at={f.next_poll_at} empty={f.status === 'gone' ? 'never (gone)' : '—'} />{' '}
        <span class="muted">every {seconds(f.interval_seconds)}</span>
      </Fact>
      <Fact label="HTTP status">{f.last_http_status ?? '—'}</Fact>
      <Fact label="Entries seen">{f.entry_count}</Fact>
      <Fact label="Entries known by">
        {IDENTITY_LABELS[f.identity_key]}
        {f.identity_key === 'guid' ? null : (
          <span class="muted"> (switched: the feed kept changing its entry ids)</span>
        )}
      </Fact>
    </>
  );
}

/** Its errors, a degraded parse, and entries held back after the feed replaced its ids. */
function FeedTrouble(p: { f: FeedView }) {
  const f = p.f;
  return (
    <>
      <Fact label="Errors in a row">
        {f.error_count}{' '}
        <span class="muted">
          (total: {f.network_error_count} network, {f.http_error_count} HTTP, {f.parse_error_count}{' '}
          parse)
        </span>
      </Fact>
      <Fact label="Last error">
        {f.last_error ? <span class="error-text">{f.last_error}</span> : '—'}{' '}
        {f.last_error_at ? <Time at={f.last_error_at} /> : null}
      </Fact>
      {f.degraded ? <Fact label="Parsing">{f.degraded}</Fact> : null}
      {f.held_entries > 0 ? (
        <Fact label="Held entries">
          {f.held_entries} — the feed replaced most of its entry ids at once;{' '}
          <a href="/dashboard/feeds?status=identity_changed">send or discard them</a>
          {f.held_entries_dropped > 0 ? (
            <span class="muted">
              {' '}
              ({f.held_entries_dropped} more were not held: the hold is full and the feed keeps
              changing its ids)
            </span>
          ) : null}
        </Fact>
      ) : null}
    </>
  );
}

/** The feed's health: what the poller knows about it. */
export function FeedHealth(p: { f: FeedView }) {
  return (
    <dl class="facts">
      <FeedSource f={p.f} />
      <FeedSchedule f={p.f} />
      <FeedTrouble f={p.f} />
    </dl>
  );
}
