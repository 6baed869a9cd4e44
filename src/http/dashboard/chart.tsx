// A 24 h bar chart drawn on the server as inline SVG: no script, colours from the stylesheet (the CSP allows no inline
// style), a tooltip per hour (<title>) and the summary as text beside it for readers that do not see the bars.
import type { Chart } from './charts.ts';

const WIDTH = 480;
const HEIGHT = 96;
const AXIS = 16; // room under the bars for the hour labels
const SLOT = WIDTH / 24;
const BAR = SLOT - 4;

/** The bar chart of `chart`, scaled to its tallest hour; `id` names it for links and tests. */
export function HourChart(p: { id: string; title: string; chart: Chart }) {
  return (
    <figure class="chart" id={p.id}>
      <figcaption>
        <strong>{p.title}</strong> <span class="muted">{p.chart.summary}</span>
      </figcaption>
      <Bars label={`${p.title}. ${p.chart.summary}`} chart={p.chart} axis={AXIS} />
    </figure>
  );
}

/** The same bars without labels, small enough for a table cell; the summary is its tooltip. */
export function HourSparkline(p: { title: string; chart: Chart }) {
  return (
    <div class="sparkline" title={p.chart.summary}>
      <Bars label={`${p.title}. ${p.chart.summary}`} chart={p.chart} axis={0} />
    </div>
  );
}

/** The SVG: one slot per hour with its tooltip, its parts stacked from the axis up; hour labels when `axis` leaves
 *  room for them. */
function Bars(p: { label: string; chart: Chart; axis: number }) {
  const tallest = Math.max(1, ...p.chart.bars.map((b) => b.parts.reduce((a, x) => a + x.n, 0)));
  const base = HEIGHT - p.axis;
  const scale = (base - 4) / tallest;
  return (
    <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={p.label}>
      <line class="axis" x1="0" y1={base + 0.5} x2={WIDTH} y2={base + 0.5} />
      {p.chart.bars.map((b, i) => {
        let top = base;
        const x = i * SLOT + 2;
        return (
          <g class="hour">
            <title>{b.tip}</title>
            <rect class="slot" x={x} y="0" width={BAR} height={base} />
            {b.parts.map((part) => {
              if (part.n === 0) return null;
              const h = Math.max(1, part.n * scale);
              top -= h;
              return <rect class={part.kind} x={x} y={top} width={BAR} height={h} />;
            })}
            {p.axis > 0 && (i % 6 === 0 || i === 23) ? (
              <text
                x={i === 0 ? x : i === 23 ? x + BAR : x + BAR / 2}
                y={HEIGHT - 3}
                text-anchor={i === 0 ? 'start' : i === 23 ? 'end' : 'middle'}
              >
                {i === 23 ? 'now' : b.label}
              </text>
            ) : null}
          </g>
        );
      })}
    </svg>
  );
}
