/** A small line of recent values, drawn as SVG (cheap enough for one per table row). */
export function Sparkline(props: { values: readonly number[]; label: string }) {
  const { values, label } = props;
  const width = 96;
  const height = 24;
  if (values.length < 2) {
    return (
      <span class="muted" title={label}>
        –
      </span>
    );
  }
  const max = Math.max(1, ...values);
  const step = width / (values.length - 1);
  const points = values
    .map(
      (value, index) =>
        `${(index * step).toFixed(1)},${(height - 2 - (value / max) * (height - 4)).toFixed(1)}`,
    )
    .join(' ');
  return (
    <svg
      class="sparkline"
      viewBox={`0 0 ${width} ${height}`}
      width={width}
      height={height}
      role="img"
      aria-label={label}
    >
      <title>{label}</title>
      <polyline points={`0,${height} ${points} ${width},${height}`} class="sparkline-area" />
      <polyline points={points} class="sparkline-line" />
    </svg>
  );
}
