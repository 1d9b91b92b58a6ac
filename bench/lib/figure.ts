/**
 * A bench figure: one quantity measured for "ours" and for a baseline in
 * several rounds, summarised as medians and a median ratio.
 *
 * Why: every target in the issues is phrased as a ratio to a reference
 * measured on the same machine in the same run (absolute numbers vary wildly
 * between laptops and CI). Keeping the per-round pairs lets the report show
 * both the median ratio and its spread, and pass/fail is decided in one place.
 */
import { median, range, round } from './stats.ts'

/** A ratio target: `ours / baseline` compared with `value` using `op`. */
export interface RatioTarget {
  op: '>=' | '<='
  value: number
}

/** One round: the baseline and ours measured back to back. */
export interface RoundPair {
  baseline: number
  ours: number
}

/** Input for `makeFigure`. */
export interface FigureInput {
  /** Case that produced it. */
  caseName: string
  /** What is measured, e.g. "GET /health req/s (source)". */
  name: string
  unit: string
  /** What "ours" and the baseline are, e.g. "bun bin/service-server.ts" / "bench/baseline-server.ts". */
  subject: string
  baselineLabel: string
  rounds: RoundPair[]
  target?: RatioTarget
  /**
   * A bound on ours alone (median, in `unit`), for targets stated in absolute terms (issue 15's
   * memory ceilings). Still printed next to the same-run baseline and ratio, which show how much of
   * the figure is the runtime's floor on this machine. Both targets must hold when both are given.
   */
  oursTarget?: RatioTarget
  /** Free-form remarks (tool used, non-2xx seen, ...). */
  notes?: string[]
  /** Extra raw data to keep in latest.json. */
  extra?: Record<string, unknown>
  /** Set when the measurement is not trustworthy (e.g. non-2xx responses); forces a FAIL. */
  invalidReason?: string
}

/** A summarised figure as printed and written to latest.json. */
export interface Figure extends FigureInput {
  ratios: number[]
  baselineMedian: number
  oursMedian: number
  /** Median of the per-round ratios (not the ratio of medians): pairs measured close in time cancel drift. */
  ratioMedian: number
  ratioMin: number
  ratioMax: number
  /** undefined when there is no target (informational figure). */
  pass?: boolean
}

/** Summarise rounds into a figure and decide pass/fail against the target. */
export function makeFigure(input: FigureInput): Figure {
  const ratios = input.rounds.map((r) => r.ours / r.baseline)
  const ratioMedian = median(ratios)
  const { min, max } = range(ratios)
  let pass: boolean | undefined
  const holds = (t: RatioTarget, x: number) => (t.op === '>=' ? x >= t.value : x <= t.value)
  if (input.target) pass = holds(input.target, ratioMedian)
  if (input.oursTarget) pass = (pass ?? true) && holds(input.oursTarget, median(input.rounds.map((r) => r.ours)))
  if (input.invalidReason) pass = false
  return {
    ...input,
    notes: input.invalidReason ? [`INVALID: ${input.invalidReason}`, ...(input.notes ?? [])] : input.notes,
    rounds: input.rounds.map((r) => ({ baseline: round(r.baseline, 3), ours: round(r.ours, 3) })),
    ratios: ratios.map((r) => round(r, 3)),
    baselineMedian: round(median(input.rounds.map((r) => r.baseline)), 3),
    oursMedian: round(median(input.rounds.map((r) => r.ours)), 3),
    ratioMedian: round(ratioMedian, 3),
    ratioMin: round(min, 3),
    ratioMax: round(max, 3),
    pass,
  }
}
