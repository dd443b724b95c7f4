/**
 * A small SVG bar chart, no library: one panel per workload, one horizontal bar per system on
 * a logarithmic axis (the systems span orders of magnitude), the median as the bar, the
 * min–max of the runs as a whisker.
 */
export interface Bar {
  label: string;
  median: number;
  min: number;
  max: number;
  highlight: boolean;
}

export interface Panel {
  title: string;
  unit: string;
  bars: Bar[];
}

const WIDTH = 980;
const LABEL = 215;
const PLOT = 620;
const ROW = 18;
const HEAD = 34;
const AXIS = 22;
const GAP = 18;

export function barChart(title: string, subtitle: string, panels: readonly Panel[]): string {
  const parts: string[] = [];
  let y = 56;
  for (const panel of panels) {
    parts.push(renderPanel(panel, y));
    y += HEAD + panel.bars.length * ROW + AXIS + GAP;
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y}" viewBox="0 0 ${WIDTH} ${y}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${y}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="16" font-weight="600" fill="#1a202c">${escapeXml(title)}</text>`,
    `<text x="16" y="42" fill="#4a5568">${escapeXml(subtitle)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function renderPanel(panel: Panel, top: number): string {
  const finite = panel.bars.filter((bar) => Number.isFinite(bar.median) && bar.median > 0);
  const low = Math.min(...finite.map((bar) => Math.min(bar.min, bar.median)));
  const high = Math.max(...finite.map((bar) => Math.max(bar.max, bar.median)));
  const from = 10 ** Math.floor(Math.log10(finite.length === 0 ? 1 : low));
  const to = 10 ** Math.ceil(Math.log10(finite.length === 0 ? 10 : high * 1.0001));
  const span = Math.log10(to) - Math.log10(from) || 1;
  const x = (value: number) =>
    LABEL + ((Math.log10(Math.max(value, from)) - Math.log10(from)) / span) * PLOT;
  const out: string[] = [
    `<text x="16" y="${top + 18}" font-size="13" font-weight="600" fill="#1a202c">${escapeXml(panel.title)}</text>`,
    `<text x="${LABEL + PLOT}" y="${top + 18}" text-anchor="end" fill="#718096">${escapeXml(panel.unit)} (log scale)</text>`,
  ];
  const plotTop = top + HEAD - 6;
  const plotBottom = plotTop + panel.bars.length * ROW + 4;
  for (let decade = from; decade <= to * 1.0001; decade *= 10) {
    const at = x(decade).toFixed(1);
    out.push(
      `<line x1="${at}" y1="${plotTop}" x2="${at}" y2="${plotBottom}" stroke="#e2e8f0"/>`,
      `<text x="${at}" y="${plotBottom + 14}" text-anchor="middle" fill="#718096">${escapeXml(formatTick(decade))}</text>`,
    );
  }
  panel.bars.forEach((bar, index) => {
    const rowTop = plotTop + 4 + index * ROW;
    const middle = rowTop + ROW / 2 - 2;
    out.push(
      `<text x="${LABEL - 8}" y="${middle + 4}" text-anchor="end" fill="#2d3748"${bar.highlight ? ' font-weight="600"' : ''}>${escapeXml(bar.label)}</text>`,
    );
    if (!Number.isFinite(bar.median) || bar.median <= 0) {
      out.push(`<text x="${LABEL + 4}" y="${middle + 4}" fill="#c53030">no result</text>`);
      return;
    }
    const end = x(bar.median);
    out.push(
      `<rect x="${LABEL}" y="${rowTop}" width="${Math.max(1, end - LABEL).toFixed(1)}" height="${ROW - 5}" fill="${bar.highlight ? '#2b6cb0' : '#a0aec0'}"/>`,
      `<line x1="${x(bar.min).toFixed(1)}" y1="${middle}" x2="${x(bar.max).toFixed(1)}" y2="${middle}" stroke="#1a202c"/>`,
      `<text x="${(Math.max(end, x(bar.max)) + 6).toFixed(1)}" y="${middle + 4}" fill="#2d3748">${escapeXml(formatValue(bar.median))}</text>`,
    );
  });
  return out.join('\n');
}

function formatTick(value: number): string {
  if (value >= 1_000_000) return `${value / 1_000_000}M`;
  if (value >= 1000) return `${value / 1000}k`;
  return String(Number(value.toPrecision(3)));
}

function formatValue(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function escapeXml(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c,
  );
}
