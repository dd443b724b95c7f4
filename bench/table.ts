/**
 * A tiny markdown-table printer for the benchmarks: every column is padded to its widest cell,
 * the first column is left-aligned and the others (numbers) right-aligned.
 */
export function markdownTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const widths = header.map((title, column) =>
    Math.max(4, title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const pad = (cell: string, column: number) =>
    column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0);
  const line = (cells: readonly string[]) =>
    `| ${widths.map((_, column) => pad(cells[column] ?? '', column)).join(' | ')} |`;
  const rule = widths.map((width, column) => '-'.repeat(width - 1) + (column === 0 ? '-' : ':'));
  return [line(header), line(rule), ...rows.map(line)].join('\n');
}

/** 1234567.8 → '1,234,568'. */
export function formatInteger(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}
