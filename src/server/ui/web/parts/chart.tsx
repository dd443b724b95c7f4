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

/** Ticks under a minute apart tell the second; a day or more apart, the date (see timeLabel). */
const withSeconds = new Intl.DateTimeFormat(undefined, {
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const withMinutes = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayOnly = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;
/** The time axis's steps (s): whole seconds, so that no two labels tell the same time. */
const TIME_STEPS = [
  1,
  2,
  5,
  10,
  15,
  30,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
  2 * DAY,
  7 * DAY,
  14 * DAY,
];

/**
 * A time axis label: the time of day alone, to the second when ticks are under a minute apart.
 * The charts hold the readings since the page opened (10 minutes at most, at one every 2 s), so
 * a date on the axis tells nothing the reader needs, and its width ran past the canvas.
 */
export function timeLabel(seconds: number, step: number): string {
  const format = step < MINUTE ? withSeconds : step < DAY ? withMinutes : dayOnly;
  return format.format(seconds * 1000);
}

/** The widest time labels in a font, in CSS px: [to the second, to the minute]. */
const widestTimes = new Map<string, [number, number]>();

/**
 * The widest label the time axis can write, to the second and to the minute: measured over every
 * hour and every minute and second figure (digits differ in width in some fonts), and the dates.
 */
function widestTimeLabels(u: uPlot): [number, number] {
  const axis = u.axes[0] as (uPlot.Axis & { font?: unknown }) | undefined;
  const font = Array.isArray(axis?.font) ? String(axis.font[0]) : '';
  let widest = widestTimes.get(font);
  if (widest === undefined) {
    u.ctx.save();
    if (font !== '') u.ctx.font = font;
    const width = (text: string) => u.ctx.measureText(text).width / devicePixelRatio;
    let seconds = 0;
    let minutes = 0;
    for (let hour = 0; hour < 24; hour += 1) {
      for (let minute = 0; minute < 60; minute += 1) {
        const at = new Date(2000, 0, 1, hour, minute, minute);
        seconds = Math.max(seconds, width(withSeconds.format(at)));
        minutes = Math.max(minutes, width(withMinutes.format(at)));
      }
    }
    for (let month = 0; month < 12; month += 1) {
      for (let day = 1; day <= 31; day += 1) {
        minutes = Math.max(minutes, width(dayOnly.format(new Date(2000, month, day))));
      }
    }
    u.ctx.restore();
    widest = [seconds, minutes];
    widestTimes.set(font, widest);
  }
  return widest;
}

/** Clear space between a label and the canvas's side (px). */
const EDGE_GAP = 4;

/**
 * The plot's padding on one side, so that a time label centred under a tick on that side of the
 * plot stays within the canvas: on the right, half the widest label; on the left, what the y
 * axis beside it leaves of that.
 */
function timeLabelRoom(u: uPlot, side: number): number {
  const half = Math.ceil(widestTimeLabels(u)[0] / 2) + EDGE_GAP;
  if (side === 1) return half;
  // At run time uPlot keeps the axis's size so far as _size.
  const yAxis = u.axes[1] as (uPlot.Axis & { _size?: number }) | undefined;
  return Math.max(0, half - (yAxis?._size ?? 0));
}

/**
 * The least room between two time ticks (px): the widest label and a gap, to the second where
 * the ticks a minute-wide label allows would be under a minute apart.
 */
function timeTickSpace(u: uPlot, min: number, max: number, plotWidth: number): number {
  const [seconds, minutes] = widestTimeLabels(u);
  const minuteSpace = Math.ceil(minutes) + 16;
  const shortestStep = ((max - min) * minuteSpace) / Math.max(1, plotWidth);
  return shortestStep > 30 ? minuteSpace : Math.ceil(seconds) + 16;
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
    // Room beside the plot for a time label on either side (the y axis's on the left).
    padding: [null, timeLabelRoom, null, timeLabelRoom],
    axes: [
      {
        ...axis,
        space: (u, _axis, min, max, plotWidth) => timeTickSpace(u, min, max, plotWidth),
        incrs: TIME_STEPS,
        values: (_u, ticks, _axis, _space, step) => ticks.map((tick) => timeLabel(tick, step)),
      },
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
