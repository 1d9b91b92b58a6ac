/**
 * Console output for bench figures.
 *
 * Why: absolute numbers are only meaningful next to the baseline measured in
 * the same round, so every line printed shows ours, the baseline and their
 * ratio, and the final table shows the median across rounds against the target.
 */
import type { Figure } from './figure.ts'

/** Format a number for humans: thousands separators, few decimals. */
export function fmt(value: number, decimals = Math.abs(value) >= 1000 ? 0 : 1): string {
  if (!Number.isFinite(value)) return String(value)
  return value.toLocaleString('en-US', { maximumFractionDigits: decimals, minimumFractionDigits: 0 })
}

/** Print one round as it completes: `round 2/3  ours 41,200 req/s  baseline 44,000 req/s  ratio 0.936`. */
export function printRound(
  label: string,
  index: number,
  total: number,
  ours: number,
  baseline: number,
  unit: string,
): void {
  const ratio = ours / baseline
  console.log(
    `    ${label} round ${index + 1}/${total}: ours ${fmt(ours)} ${unit}, baseline ${fmt(baseline)} ${unit}, ratio ${ratio.toFixed(3)}`,
  )
}

/** The ratio target and/or the bound on ours (`ours <= 40 MB`), as printed. */
function targetText(f: Figure): string {
  const parts: string[] = []
  if (f.target) parts.push(`${f.target.op} ${f.target.value}`)
  if (f.oursTarget) parts.push(`ours ${f.oursTarget.op} ${f.oursTarget.value} ${f.unit}`)
  return parts.join(', ')
}

/** Print a figure's summary lines (medians, ratio spread, target verdict). */
export function printFigure(f: Figure): void {
  const verdict = f.pass === undefined ? 'info' : f.pass ? 'PASS' : 'FAIL'
  const target = targetText(f) ? ` target ${targetText(f)}` : ''
  console.log(
    `  => ${f.name}: ours ${fmt(f.oursMedian)} ${f.unit} vs baseline ${fmt(f.baselineMedian)} ${f.unit}; ` +
      `median ratio ${f.ratioMedian.toFixed(3)} (range ${f.ratioMin.toFixed(3)}–${f.ratioMax.toFixed(3)}, ${f.ratios.length} rounds)${target} [${verdict}]`,
  )
  for (const note of f.notes ?? []) console.log(`     note: ${note}`)
}

/** Print the final table of all figures. */
export function printTable(figures: Figure[]): void {
  const header = ['case', 'figure', 'ours (median)', 'baseline (median)', 'ratio', 'range', 'target', 'result']
  const rows = figures.map((f) => [
    f.caseName,
    f.name,
    `${fmt(f.oursMedian)} ${f.unit}`,
    `${fmt(f.baselineMedian)} ${f.unit} (${f.baselineLabel})`,
    f.ratioMedian.toFixed(3),
    `${f.ratioMin.toFixed(2)}–${f.ratioMax.toFixed(2)}`,
    targetText(f) || '-',
    f.pass === undefined ? 'info' : f.pass ? 'PASS' : 'FAIL',
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  console.log('')
  console.log(line(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const r of rows) console.log(line(r))
  console.log('')
}
