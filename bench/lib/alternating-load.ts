/**
 * Alternating load rounds across several running servers.
 *
 * Why: on a shared machine throughput drifts by ±10–15 % within seconds
 * (other processes, CPU frequency, noisy VM neighbours). Comparing a server
 * with a baseline is only meaningful if both are measured close together and
 * often: each round loads every server once, back to back, and the order is
 * reversed every other round so neither side systematically gets the
 * "first"/"last" slot. Callers turn the per-round results into ratios.
 */
import { runLoad, type LoadResult, type LoadTool } from './load-driver.ts'
import { processCpuSeconds } from './process-cpu.ts'

/** One server to load; `url` is the full URL to hit. */
export interface LoadTarget {
  key: string
  url: string
  method?: string
  headers?: Record<string, string>
  body?: string
  /** Number each request's `[<id>]` uniquely (see `LoadOptions.uniqueIds`). */
  uniqueIds?: boolean
  /** The server's pid: when given, the result carries the CPU it spent per request. */
  pid?: number
}

/** A load result, with the server's CPU per request when its pid was given. */
export type MeasuredLoad = LoadResult & { cpuMicrosPerRequest?: number }

/** Settings for `runAlternatingRounds`. */
export interface AlternatingOptions {
  rounds: number
  durationSec: number
  connections: number
  /** Unmeasured load per target before round 1 (0 to skip). */
  warmupSec: number
  tool: LoadTool
  /** Called after each round with that round's results by key. */
  onRound?: (round: number, results: Record<string, MeasuredLoad>) => void
}

/** Run warm-up then `rounds` alternating rounds; returns results[key][round]. */
export async function runAlternatingRounds(
  targets: LoadTarget[],
  opts: AlternatingOptions,
): Promise<Record<string, MeasuredLoad[]>> {
  const run = (t: LoadTarget, durationSec: number) =>
    runLoad({
      url: t.url,
      method: t.method,
      headers: t.headers,
      body: t.body,
      uniqueIds: t.uniqueIds,
      durationSec,
      connections: opts.connections,
      tool: opts.tool,
    })
  const load = async (t: LoadTarget, durationSec: number): Promise<MeasuredLoad> => {
    const before = t.pid ? processCpuSeconds(t.pid) : null
    const result: MeasuredLoad = await run(t, durationSec)
    const after = t.pid ? processCpuSeconds(t.pid) : null
    if (before !== null && after !== null && result.requests > 0)
      result.cpuMicrosPerRequest = ((after - before) * 1e6) / result.requests
    return result
  }
  if (opts.warmupSec > 0) for (const t of targets) await load(t, opts.warmupSec)
  const out: Record<string, MeasuredLoad[]> = Object.fromEntries(targets.map((t) => [t.key, []]))
  for (let r = 0; r < opts.rounds; r++) {
    const order = r % 2 === 0 ? targets : [...targets].reverse()
    const round: Record<string, MeasuredLoad> = {}
    for (const t of order) round[t.key] = await load(t, opts.durationSec)
    for (const t of targets) out[t.key]!.push(round[t.key]!)
    opts.onRound?.(r, round)
  }
  return out
}
