/**
 * GET /health requests per second of the product (from source under bun, and
 * the compiled binary when available) as a ratio to the minimal Bun.serve JSON
 * baseline. Target: median ratio ≥ 0.9.
 *
 * Method: all servers run side by side (idle ones cost nothing); each gets
 * `warmupSec` of unmeasured load, then `rounds` rounds load them one after the
 * other for `durationSec` with `connections` keep-alive connections. The order
 * flips every round (baseline first, then last) so slow drift on the machine
 * does not favour one side. Ratio per round = ours / baseline of that round.
 */
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure, type RoundPair } from '../lib/figure.ts'
import { runLoad, type LoadResult } from '../lib/load-driver.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer, type ServerCommand } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const PATH = '/health'
const TARGET = { op: '>=' as const, value: 0.9 }

interface Subject {
  key: string
  describe: string
  cmd: ServerCommand
  server?: RunningServer
  results: LoadResult[]
}

async function checkHealth(server: RunningServer): Promise<void> {
  const res = await fetch(`${server.baseUrl}${PATH}`)
  const body = await res.text()
  if (res.status !== 200) throw new Error(`${server.label}: GET ${PATH} answered ${res.status}: ${body.slice(0, 200)}`)
}

async function run(ctx: BenchContext): Promise<void> {
  const s = ctx.settings
  const baseline: Subject = { key: 'baseline', describe: 'bench/baseline-server.ts (bun)', cmd: ctx.baselineCommand(), results: [] }
  const ours: Subject[] = []
  if (ctx.hasProductSource()) {
    ours.push({ key: 'source', describe: 'bun bin/service-server.ts', cmd: ctx.productCommand('source', ctx.tempDir('rps-source')), results: [] })
  } else {
    ctx.skip('source', 'bin/service-server.ts does not exist')
  }
  const bin = await ctx.productBinary()
  if (bin) {
    ours.push({ key: 'binary', describe: 'dist/service-server', cmd: ctx.productCommand('binary', ctx.tempDir('rps-binary'), bin), results: [] })
  } else {
    ctx.skip('binary', 'no product binary')
  }
  if (ours.length === 0) return

  const all = [baseline, ...ours]
  try {
    for (const subj of all) {
      subj.server = await startServer(subj.cmd)
      await checkHealth(subj.server)
    }
    const load = (subj: Subject, durationSec: number) =>
      runLoad({ url: `${subj.server!.baseUrl}${PATH}`, durationSec, connections: s.connections, tool: s.tool })

    if (s.warmupSec > 0) {
      ctx.log(`warm-up: ${s.warmupSec} s per server`)
      for (const subj of all) await load(subj, s.warmupSec)
    }
    for (let r = 0; r < s.rounds; r++) {
      const order = r % 2 === 0 ? all : [...all].reverse()
      for (const subj of order) subj.results.push(await load(subj, s.durationSec))
      for (const subj of ours) printRound(subj.key, r, s.rounds, subj.results[r]!.rps, baseline.results[r]!.rps, 'req/s')
      for (const subj of all) {
        const res = subj.results[r]!
        if (res.non2xx > 0 || res.errors > 0) {
          ctx.log(`${subj.key} round ${r + 1}: ${res.non2xx} non-2xx, ${res.errors} socket errors`)
        }
      }
    }

    for (const subj of ours) {
      const rounds: RoundPair[] = subj.results.map((res, i) => ({ baseline: baseline.results[i]!.rps, ours: res.rps }))
      const bad = subj.results.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = subj.results.reduce((a, x) => a + x.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'health-rps',
          name: `GET ${PATH} req/s (${subj.key})`,
          unit: 'req/s',
          subject: subj.describe,
          baselineLabel: 'Bun.serve JSON',
          rounds,
          target: TARGET,
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; ` +
              `p99 latency ours ${round(median(subj.results.map((x) => x.latencyP99Ms)))} ms vs baseline ${round(median(baseline.results.map((x) => x.latencyP99Ms)))} ms`,
          ],
          extra: {
            tool: s.tool,
            oursLatencyP50Ms: subj.results.map((x) => round(x.latencyP50Ms, 3)),
            oursLatencyP99Ms: subj.results.map((x) => round(x.latencyP99Ms, 3)),
            baselineLatencyP50Ms: baseline.results.map((x) => round(x.latencyP50Ms, 3)),
            baselineLatencyP99Ms: baseline.results.map((x) => round(x.latencyP99Ms, 3)),
            oursNon2xxOrErrors: bad,
          },
        }),
      )
    }
  } finally {
    await Promise.all(all.map((subj) => subj.server?.stop()))
  }
}

export default defineCase({
  name: 'health-rps',
  description: 'GET /health req/s, ours (source, binary) vs Bun.serve JSON baseline; target ratio >= 0.9',
  run,
})
