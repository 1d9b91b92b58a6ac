/**
 * Start time of the compiled product binary, exec → first 200 on /health, as
 * a ratio to the compiled hello-world (bench/hello.ts). Target: ≤ 2×.
 *
 * Method: one unmeasured start of each first (pages the ~100 MB binaries into
 * the page cache and lets the product create its data dir), then `starts`
 * pairs, interleaved, flipping which goes first each pair. The product reuses
 * one workspace/data dir, so this is a restart with existing data. Ratio per
 * pair = ours / hello; the figure is the median ratio.
 */
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure, type RoundPair } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { timeToFirstOk, type StartTiming } from '../lib/start-timer.ts'
import { median, round } from '../lib/stats.ts'

const TARGET = { op: '<=' as const, value: 2 }

async function run(ctx: BenchContext): Promise<void> {
  const bin = await ctx.productBinary()
  if (!bin) {
    ctx.skip('start-time', 'no product binary')
    return
  }
  const hello = ctx.helloCommand(await ctx.helloBinary())
  const ours = ctx.productCommand('binary', ctx.tempDir('start'), bin)

  await timeToFirstOk(hello)
  await timeToFirstOk(ours)

  const helloRuns: StartTiming[] = []
  const oursRuns: StartTiming[] = []
  const rounds: RoundPair[] = []
  for (let i = 0; i < ctx.settings.starts; i++) {
    if (i % 2 === 0) {
      helloRuns.push(await timeToFirstOk(hello))
      oursRuns.push(await timeToFirstOk(ours))
    } else {
      oursRuns.push(await timeToFirstOk(ours))
      helloRuns.push(await timeToFirstOk(hello))
    }
    rounds.push({ baseline: helloRuns[i]!.firstOkMs, ours: oursRuns[i]!.firstOkMs })
  }
  for (const [i, r] of rounds.entries()) printRound('start', i, rounds.length, r.ours, r.baseline, 'ms')

  const med = (xs: StartTiming[], k: keyof StartTiming) => round(median(xs.map((x) => x[k] as number)), 2)
  ctx.record(
    makeFigure({
      caseName: 'start-time',
      name: 'exec → first 200 on /health (binary)',
      unit: 'ms',
      subject: 'dist/service-server',
      baselineLabel: 'compiled hello.ts',
      rounds,
      target: TARGET,
      notes: [
        `exec → listening line: ours ${med(oursRuns, 'listeningMs')} ms vs hello ${med(helloRuns, 'listeningMs')} ms (medians of ${rounds.length})`,
      ],
      extra: {
        oursListeningMs: oursRuns.map((x) => round(x.listeningMs, 2)),
        helloListeningMs: helloRuns.map((x) => round(x.listeningMs, 2)),
        oursFailedProbes: oursRuns.map((x) => x.failedProbes),
      },
    }),
  )
}

export default defineCase({
  name: 'start-time',
  description: 'compiled binary exec -> first 200 on /health vs compiled hello-world; target ratio <= 2',
  run,
})
