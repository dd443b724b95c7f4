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
        size: 48,
        values: (_u, ticks) => ticks.map((tick) => `${+tick.toFixed(2)}${unit}`),
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

  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const chart = new uPlot(
      options(title, series, element.clientWidth || 320, unit),
      data,
      element,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() =>
      chart.setSize({ width: element.clientWidth, height: 180 }),
    );
    resize.observe(element);
    const scheme = matchMedia('(prefers-color-scheme: dark)');
    const recolor = () => {
      chart.destroy();
      plot.current = new uPlot(options(title, series, element.clientWidth, unit), data, element);
    };
    scheme.addEventListener('change', recolor);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', recolor);
      plot.current?.destroy();
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
