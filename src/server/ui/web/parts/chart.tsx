import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** A CSS colour variable name, e.g. --series-1. */
  color: string;
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

const compact = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });

/** An axis label: 950, 12.5, 10K, 1.5M (the exact value is in the legend). */
export function axisLabel(value: number, unit = ''): string {
  const text = Math.abs(value) < 10_000 ? String(+value.toFixed(2)) : compact.format(value);
  return `${text}${unit}`;
}

/**
 * The y axis's width, to fit its widest label (uPlot asks again as the labels change; from the
 * second cycle of one draw the size is kept, so that it settles).
 */
function axisSize(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  // At run time uPlot keeps the axis's font as [font, size] and its size so far as _size.
  const axis = u.axes[axisIdx] as
    | (uPlot.Axis & { _size?: number; font?: unknown; ticks?: { size?: number } })
    | undefined;
  if (cycleNum > 1 && axis?._size !== undefined) return axis._size;
  let size = (axis?.ticks?.size ?? 10) + (axis?.gap ?? 5) + 4;
  const longest = (values ?? []).reduce(
    (max, value) => (value.length > max.length ? value : max),
    '',
  );
  if (longest !== '') {
    const font = Array.isArray(axis?.font) ? axis.font[0] : undefined;
    u.ctx.save();
    if (typeof font === 'string') u.ctx.font = font;
    size += u.ctx.measureText(longest).width / devicePixelRatio;
    u.ctx.restore();
  }
  return Math.max(32, Math.ceil(size));
}

function options(title: string, series: ChartSeries[], width: number, unit: string): uPlot.Options {
  const grid = cssVar('--grid');
  const text = cssVar('--muted');
  const axis = {
    stroke: text,
    grid: { stroke: grid, width: 1 },
    ticks: { stroke: grid, width: 1 },
  };
  return {
    title,
    width,
    height: 180,
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
    scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [
      axis,
      {
        ...axis,
        size: axisSize,
        values: (_u, ticks) => ticks.map((tick) => axisLabel(tick, unit)),
      },
    ],
    series: [
      {},
      ...series.map((entry) => ({
        label: entry.label,
        stroke: cssVar(entry.color),
        width: 1.5,
        points: { show: false },
        spanGaps: false,
      })),
    ],
  };
}

/** A time chart (uPlot) of a few series; times in epoch ms. */
export function Chart(props: {
  title: string;
  times: number[];
  series: ChartSeries[];
  unit?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const { title, times, series, unit = '' } = props;
  const data = [
    times.map((t) => t / 1000),
    ...series.map((entry) => entry.values),
  ] as uPlot.AlignedData;
  const shape = series.map((entry) => entry.label).join('|');
  // The newest data, for a chart made again between two renders (a colour-scheme change).
  const newest = useRef(data);
  newest.current = data;

  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const make = () =>
      new uPlot(options(title, series, element.clientWidth || 320, unit), newest.current, element);
    plot.current = make();
    // Always the chart drawn now: a change of colour scheme replaces it.
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: element.clientWidth, height: 180 }),
    );
    resize.observe(element);
    const scheme = matchMedia('(prefers-color-scheme: dark)');
    const recolor = () => {
      plot.current?.destroy();
      plot.current = make();
    };
    scheme.addEventListener('change', recolor);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', recolor);
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [shape, title]);

  useEffect(() => {
    plot.current?.setData(data);
  });

  const latest = series
    .map((entry) => `${entry.label} ${entry.values.at(-1) ?? 'none'}`)
    .join(', ');
  return (
    <figure class="chart">
      <div ref={box} role="img" aria-label={`${title}: latest ${latest}`} />
    </figure>
  );
}
