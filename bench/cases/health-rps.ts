/**
 * GET /health requests per second of the product (from source under bun, and
 * the compiled binary when available) as a ratio to the minimal Bun.serve JSON
 * baseline. Target: median ratio ≥ 0.9.
 *
 * Method: all servers run side by side (idle ones cost nothing); each gets
 * `warmupSec` of unmeasured load, then `rounds` alternating rounds (see
 * lib/alternating-load.ts) load them one after the other for `durationSec`
 * with `connections` keep-alive connections. Ratio per round = ours /
 * baseline of that round; the figure is the median ratio.
 */
import { fileURLToPath } from 'node:url'
import { runAlternatingRounds } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer, type ServerCommand } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const PATH = '/health'
const TARGET = { op: '>=' as const, value: 0.9 }

/** Fail fast (with the body) if the path does not answer 200, so rps of error pages is never reported. */
async function checkOk(server: RunningServer, path: string): Promise<void> {
  const res = await fetch(`${server.baseUrl}${path}`)
  const body = await res.text()
  if (res.status !== 200) throw new Error(`${server.label}: GET ${path} answered ${res.status}: ${body.slice(0, 200)}`)
}

async function run(ctx: BenchContext): Promise<void> {
  const s = ctx.settings
  const ours: Array<{ key: string; describe: string; cmd: ServerCommand }> = []
  if (ctx.hasProductSource()) {
    ours.push({
      key: 'source',
      describe: 'bun bin/service-server.ts',
      cmd: ctx.productCommand('source', ctx.tempDir('rps-source')),
    })
  } else {
    ctx.skip('source', 'bin/service-server.ts does not exist')
  }
  const bin = await ctx.productBinary()
  if (bin) {
    ours.push({
      key: 'binary',
      describe: 'dist/service-server',
      cmd: ctx.productCommand('binary', ctx.tempDir('rps-binary'), bin),
    })
  } else {
    ctx.skip('binary', 'no product binary')
  }
  if (ours.length === 0) return

  const baselineCmd = ctx.baselineCommand()
  const ceilingCmd: ServerCommand = {
    ...baselineCmd,
    label: 'ceiling',
    stderrFile: baselineCmd.stderrFile?.replace(/baseline(?=[^/]*$)/, 'ceiling'),
    args: [fileURLToPath(new URL('../ceiling-server.ts', import.meta.url)), ...baselineCmd.args.slice(1)],
  }
  const subjects = [
    { key: 'baseline', describe: 'bench/baseline-server.ts', cmd: baselineCmd },
    ...ours,
    { key: 'ceiling', describe: 'bench/ceiling-server.ts', cmd: ceilingCmd },
  ]
  const servers: RunningServer[] = []
  try {
    for (const subj of subjects) {
      const server = await startServer(subj.cmd)
      servers.push(server)
      await checkOk(server, PATH)
    }
    ctx.log(
      `warm-up ${s.warmupSec} s per server, then ${s.rounds} rounds × ${s.durationSec} s × ${subjects.length} servers`,
    )
    const results = await runAlternatingRounds(
      subjects.map((subj, i) => ({ key: subj.key, url: `${servers[i]!.baseUrl}${PATH}` })),
      {
        ...s,
        onRound: (r, res) => {
          for (const o of [...ours, { key: 'ceiling' }])
            printRound(o.key, r, s.rounds, res[o.key]!.rps, res.baseline!.rps, 'req/s')
          for (const [key, x] of Object.entries(res)) {
            if (x.non2xx > 0 || x.errors > 0)
              ctx.log(`${key} round ${r + 1}: ${x.non2xx} non-2xx, ${x.errors} socket errors`)
          }
        },
      },
    )
    const base = results.baseline!
    for (const o of ours) {
      const mine = results[o.key]!
      const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = mine.reduce((a, x) => a + x.requests, 0)
      const p99 = (xs: typeof mine) => round(median(xs.map((x) => x.latencyP99Ms)), 2)
      ctx.record(
        makeFigure({
          caseName: 'health-rps',
          name: `GET ${PATH} req/s (${o.key})`,
          unit: 'req/s',
          subject: o.describe,
          baselineLabel: 'Bun.serve JSON',
          rounds: mine.map((x, i) => ({ baseline: base[i]!.rps, ours: x.rps })),
          target: TARGET,
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p99 latency ours ${p99(mine)} ms vs baseline ${p99(base)} ms`,
          ],
          extra: {
            tool: s.tool,
            oursLatencyP99Ms: mine.map((x) => round(x.latencyP99Ms, 3)),
            baselineLatencyP99Ms: base.map((x) => round(x.latencyP99Ms, 3)),
            oursNon2xxOrErrors: bad,
          },
        }),
      )
    }
    const ceiling = results.ceiling!
    ctx.record(
      makeFigure({
        caseName: 'health-rps',
        name: 'contract ceiling req/s (no routing)',
        unit: 'req/s',
        subject:
          'bench/ceiling-server.ts: X-Request-Id by our rule (safe client id or fresh), nosniff, JSON body, url + method read',
        baselineLabel: 'Bun.serve JSON',
        rounds: ceiling.map((x, i) => ({ baseline: base[i]!.rps, ours: x.rps })),
        notes: [
          'informational: the most any server meeting the response contract reached here; the gap between it and ours is our pipeline',
        ],
      }),
    )
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'health-rps',
  description: 'GET /health req/s, ours (source, binary) vs Bun.serve JSON baseline; target ratio >= 0.9',
  run,
})
