/**
 * Small statistics helpers.
 *
 * Why: every bench figure is summarised the same way (median across rounds,
 * which resists the one noisy round a shared machine produces), so the
 * arithmetic lives in one place.
 */

/** Median of a list (mean of the middle two for even lengths); NaN for an empty list. */
export function median(values: readonly number[]): number {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  if (xs.length === 0) return Number.NaN
  const mid = xs.length >> 1
  return xs.length % 2 === 1 ? xs[mid]! : (xs[mid - 1]! + xs[mid]!) / 2
}

/** Smallest and largest finite value, used to show the spread next to a median. */
export function range(values: readonly number[]): { min: number; max: number } {
  const xs = values.filter((v) => Number.isFinite(v))
  return { min: Math.min(...xs), max: Math.max(...xs) }
}

/** Round to a fixed number of decimals for printing and JSON (keeps results diff-friendly). */
export function round(value: number, decimals = 2): number {
  if (!Number.isFinite(value)) return value
  const f = 10 ** decimals
  return Math.round(value * f) / f
}

/** Promise-based sleep. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
