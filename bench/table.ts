export interface Column {
  readonly header: string;
  /** Numbers read best right-aligned, so their decimal points line up. */
  readonly align: 'left' | 'right';
}

/** Plain-text table: columns padded to their widest cell, a dashed rule under the header. */
export function formatTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((column, index) => Math.max(column.header.length, ...rows.map((row) => (row[index] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    columns
      .map((column, index) => {
        const cell = cells[index] ?? '';
        const width = widths[index] ?? 0;
        return column.align === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [line(columns.map((column) => column.header)), rule, ...rows.map(line)].join('\n');
}

/** Milliseconds as the load and hop tables print them: two decimals, '-' for no figure. */
export const ms = (value: number): string => (Number.isFinite(value) ? value.toFixed(2) : '-');

/** A ratio as the load and hop tables print it. */
export const ratio = (value: number): string => `${value.toFixed(2)}x`;
