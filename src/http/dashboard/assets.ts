// The dashboard's one stylesheet and its optional local-time script, served with long-lived cache headers by content hash.
import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';

const STYLE = `
:root { --fg: #1d232b; --muted: #5b6470; --line: #d9dee5; --bg: #f6f7f9; --card: #fff; --accent: #1f5fbf;
  --ok: #1c7a3f; --warn: #a35f00; --bad: #b3261e; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); }
a { color: var(--accent); }
header.top { background: #17202b; color: #fff; display: flex; flex-wrap: wrap; align-items: center; gap: .25rem 1.25rem; padding: .6rem 1.25rem; }
header.top a { color: #dfe7f3; text-decoration: none; padding: .2rem 0; }
header.top a[aria-current="page"] { color: #fff; border-bottom: 2px solid #8fb6ff; }
header.top .brand { font-weight: 700; color: #fff; margin-right: .5rem; }
header.top .who { margin-left: auto; display: flex; align-items: center; gap: .75rem; color: #c9d3e0; }
header.top .who button { background: transparent; color: #fff; border: 1px solid #6c7a8c; }
main { max-width: 1100px; margin: 0 auto; padding: 1.25rem; }
h1 { font-size: 1.5rem; margin: .25rem 0 1rem; } h2 { font-size: 1.15rem; margin: 1.5rem 0 .6rem; }
section.card, form.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin: 0 0 1rem; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); }
th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
td.url, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .85rem; word-break: break-all; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; word-break: break-word; }
.field { margin: 0 0 .8rem; } .field label { display: block; font-weight: 600; margin-bottom: .2rem; }
.field .hint { color: var(--muted); font-size: .85rem; }
input[type=text], input[type=url], input[type=password], input[type=datetime-local], select, textarea {
  width: 100%; max-width: 40rem; padding: .45rem .55rem; border: 1px solid #b7c0cc; border-radius: 6px; font: inherit; background: #fff; }
textarea { font-family: ui-monospace, Menlo, monospace; font-size: .85rem; min-height: 6rem; }
.field.invalid input, .field.invalid textarea, .field.invalid select { border-color: var(--bad); }
.field .error { color: var(--bad); font-size: .9rem; margin: .2rem 0 0; }
button { font: inherit; padding: .4rem .85rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); } button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
form.inline { display: inline; margin: 0 .4rem .4rem 0; }
.actions { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; }
h1.mono { font-size: 1.15rem; } .spaced { margin-top: .7rem; } label.inline-label { display: inline; font-weight: 600; }
fieldset.choices { border: 1px solid var(--line); border-radius: 6px; max-width: 40rem; padding: .4rem .8rem .6rem; }
fieldset.choices legend { font-weight: 600; padding: 0 .3rem; } fieldset.choices ul { list-style: none; margin: .2rem 0 .3rem 1.5rem; padding: 0; }
fieldset.choices.invalid { border-color: var(--bad); }
.notice { padding: .6rem .9rem; border-radius: 6px; margin: 0 0 1rem; background: #e8f1ff; border: 1px solid #b8d0fb; }
.notice.error { background: #fdecea; border-color: #f1b7b2; } .notice.ok { background: #e7f5ec; border-color: #b3dcc1; }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .8rem; font-weight: 600; background: #e9edf2; color: var(--muted); }
.badge.active, .badge.delivered { background: #e2f3e8; color: var(--ok); }
.badge.error, .badge.failed, .badge.dead, .badge.disabled, .badge.gone { background: #fbe3e1; color: var(--bad); }
.badge.pending, .badge.paused, .badge.identity_changed, .badge.over_budget { background: #fdf0dc; color: var(--warn); }
.empty { padding: 1rem; border: 1px dashed #b7c0cc; border-radius: 8px; color: var(--muted); background: var(--card); }
.muted { color: var(--muted); } .error-text { color: var(--bad); }
pre { background: #f0f2f5; padding: .5rem; border-radius: 6px; white-space: pre-wrap; word-break: break-all; max-height: 14rem; overflow: auto; margin: .3rem 0; }
details summary { cursor: pointer; color: var(--accent); }
.tabs { display: flex; flex-wrap: wrap; gap: .3rem; margin: 0 0 1rem; } .tabs a { padding: .2rem .7rem; border: 1px solid var(--line); border-radius: 999px; background: #fff; text-decoration: none; }
.tabs a[aria-current="page"] { background: var(--accent); color: #fff; border-color: var(--accent); }
.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .8rem; margin: 0 0 1rem; }
.stats a { display: block; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem; text-decoration: none; color: var(--fg); }
.stats strong { display: block; font-size: 1.6rem; }
figure.chart { margin: 0 0 1rem; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem; }
figure.chart svg { display: block; width: 100%; max-width: 40rem; height: auto; margin-top: .4rem; }
.chart .slot { fill: transparent; } .chart .hour:hover .slot { fill: #eef2f7; }
.chart .good { fill: var(--ok); } .chart .warn { fill: #e0a030; } .chart .bad { fill: var(--bad); }
.sparkline { width: 8rem; } .sparkline svg { display: block; width: 100%; height: 2rem; }
.chart .axis, .sparkline .axis { stroke: var(--line); }
.sparkline .good { fill: var(--ok); } .sparkline .warn { fill: #e0a030; } .sparkline .bad { fill: var(--bad); } .sparkline .slot { fill: transparent; } .chart text { font-size: 11px; fill: var(--muted); }
.secret { font-family: ui-monospace, Menlo, monospace; background: #fff8e1; border: 1px solid #f0d58a; padding: .4rem .6rem; border-radius: 6px; word-break: break-all; }
pre, td, dd, .about { overflow-wrap: anywhere; } .badge { overflow-wrap: normal; white-space: nowrap; }
/* Phones (375 px and up): the header wraps, facts and table rows stack, each cell under its column's name, so nothing
   is wider than the screen. */
@media (max-width: 720px) {
  main { padding: .75rem; }
  header.top { padding: .5rem .75rem; gap: .25rem .9rem; }
  header.top .who { margin-left: 0; width: 100%; justify-content: space-between; }
  section.card, form.card { padding: .75rem; }
  dl.facts { grid-template-columns: 1fr; gap: 0; } dl.facts dd { margin-bottom: .5rem; }
  table, tbody, tr, td { display: block; width: 100%; }
  table { border: 0; background: transparent; } thead { display: none; }
  tr { background: var(--card); border: 1px solid var(--line); border-radius: 8px; margin: 0 0 .6rem; padding: .3rem 0; }
  td { border: 0; padding: .2rem .75rem; }
  td[data-label]::before { content: attr(data-label); display: block; font-size: .72rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); }
  .stats { grid-template-columns: 1fr 1fr; }
  figure.chart { padding: .5rem; }
}
`;

/** Turns every <time datetime> into the viewer's local time; the UTC value stays in the tooltip. Optional: pages work without it. */
const LOCAL_TIME = `document.querySelectorAll('time[datetime]').forEach(function (t) {
  var d = new Date(t.getAttribute('datetime'));
  if (!isNaN(d.getTime())) { t.textContent = d.toLocaleString(); t.classList.add('local'); }
});
`;

const hash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);
const STYLE_HASH = hash(STYLE);
const SCRIPT_HASH = hash(LOCAL_TIME);

/** URLs of the assets, versioned by content so browsers may cache them for a year. */
export const ASSET_URLS = {
  style: `/dashboard/assets/style.css?v=${STYLE_HASH}`,
  script: `/dashboard/assets/local-time.js?v=${SCRIPT_HASH}`,
};

/** The assets sub-app (no session needed): ETag, immutable caching, 304 on If-None-Match. */
export function assetsApp(): Hono {
  const serve = (body: string, type: string, etag: string) => (c: Context) => {
    const headers = {
      'content-type': type,
      'cache-control': 'public, max-age=31536000, immutable',
      etag: `"${etag}"`,
      'x-content-type-options': 'nosniff',
    };
    if (c.req.header('if-none-match') === `"${etag}"`) return c.body(null, 304, headers);
    return c.body(body, 200, headers);
  };
  return new Hono()
    .get('/style.css', serve(STYLE, 'text/css; charset=utf-8', STYLE_HASH))
    .get('/local-time.js', serve(LOCAL_TIME, 'text/javascript; charset=utf-8', SCRIPT_HASH));
}
