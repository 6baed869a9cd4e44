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
  const tallest = Math.max(1, ...p.chart.bars.map((b) => b.parts.reduce((a, x) => a + x.n, 0)));
  const scale = (HEIGHT - AXIS - 4) / tallest;
  const base = HEIGHT - AXIS;
  return (
    <figure class="chart" id={p.id}>
      <figcaption>
        <strong>{p.title}</strong> <span class="muted">{p.chart.summary}</span>
      </figcaption>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={`${p.title}. ${p.chart.summary}`}
      >
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
              {i % 6 === 0 || i === 23 ? (
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
    </figure>
  );
}
