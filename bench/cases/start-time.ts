/**
 * Start time of the compiled product binary, exec → first 200 on /health, as
 * a ratio to the compiled hello-world (bench/hello.ts). Target: ≤ 2×.
 *
 * Method: every binary is dropped from the page cache first (lib/page-cache.ts),
 * then one unmeasured start of each faults in what it uses (as for an installed
 * binary) and lets the product create its data dir, then `starts`
 * pairs, interleaved, flipping which goes first each pair. The product reuses
 * one workspace/data dir, so this is a restart with existing data. Ratio per
 * pair = ours / hello; the figure is the median ratio.
 *
 * Each pair also starts the module floor (bench/module-floor.ts: our workspace
 * module graph evaluated, nothing started), recorded as an informational
 * figure: it splits the product's figure into "loading our code" and "starting".
 */
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure, type RoundPair } from '../lib/figure.ts'
import { evictFromPageCache } from '../lib/page-cache.ts'
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
  const helloBin = await ctx.helloBinary()
  const floorBin = await ctx.floorBinary()
  for (const path of [helloBin, floorBin, bin])
    if (!evictFromPageCache(path)) ctx.log(`could not drop ${path} from the page cache; figures depend on its history`)
  const hello = ctx.helloCommand(helloBin)
  const ours = ctx.productCommand('binary', ctx.tempDir('start'), bin)
  const floor = ctx.floorCommand(floorBin)

  await timeToFirstOk(hello)
  await timeToFirstOk(ours)
  await timeToFirstOk(floor)

  const helloRuns: StartTiming[] = []
  const oursRuns: StartTiming[] = []
  const floorRuns: StartTiming[] = []
  const rounds: RoundPair[] = []
  const floorRounds: RoundPair[] = []
  for (let i = 0; i < ctx.settings.starts; i++) {
    const order = i % 2 === 0 ? [hello, floor, ours] : [ours, floor, hello]
    for (const cmd of order) {
      const timing = await timeToFirstOk(cmd)
      ;(cmd === hello ? helloRuns : cmd === ours ? oursRuns : floorRuns).push(timing)
    }
    rounds.push({ baseline: helloRuns[i]!.firstOkMs, ours: oursRuns[i]!.firstOkMs })
    floorRounds.push({ baseline: helloRuns[i]!.firstOkMs, ours: floorRuns[i]!.firstOkMs })
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
  ctx.record(
    makeFigure({
      caseName: 'start-time',
      name: 'module floor: exec → first 200 (binary)',
      unit: 'ms',
      subject: 'bench/module-floor.ts: workspace module graph evaluated, nothing started',
      baselineLabel: 'compiled hello.ts',
      rounds: floorRounds,
      notes: [
        'informational: loading our code alone; the gap between it and the product is start-up work (config, state database, watchers, routes)',
      ],
    }),
  )
}

export default defineCase({
  name: 'start-time',
  description: 'compiled binary exec -> first 200 on /health vs compiled hello-world; target ratio <= 2',
  run,
})
