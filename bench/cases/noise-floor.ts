/**
 * A/A check (optional, run by name): the baseline server against a second
 * copy of itself, measured exactly like health-rps.
 *
 * Why: the ideal ratio is 1.0, so the spread of this figure is the noise floor
 * of the machine for throughput ratios. If it reaches ±10 %, a 0.9 target
 * cannot be judged from a single run: raise --rounds or rerun on a quiet box.
 */
import { runAlternatingRounds } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'

async function run(ctx: BenchContext): Promise<void> {
  const s = ctx.settings
  const servers: RunningServer[] = []
  try {
    servers.push(await startServer({ ...ctx.baselineCommand(), label: 'baseline-a' }))
    servers.push(await startServer({ ...ctx.baselineCommand(), label: 'baseline-b' }))
    const results = await runAlternatingRounds(
      [
        { key: 'a', url: `${servers[0]!.baseUrl}/health` },
        { key: 'b', url: `${servers[1]!.baseUrl}/health` },
      ],
      { ...s, onRound: (r, res) => printRound('a/a', r, s.rounds, res.b!.rps, res.a!.rps, 'req/s') },
    )
    ctx.record(
      makeFigure({
        caseName: 'noise-floor',
        name: 'baseline vs baseline req/s (ideal 1.0)',
        unit: 'req/s',
        subject: 'bench/baseline-server.ts (copy b)',
        baselineLabel: 'copy a',
        rounds: results.a!.map((x, i) => ({ baseline: x.rps, ours: results.b![i]!.rps })),
        notes: [`${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement`],
      }),
    )
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'noise-floor',
  description: 'A/A: baseline vs a second baseline (ideal ratio 1.0); optional, run by name',
  optional: true,
  run,
})
