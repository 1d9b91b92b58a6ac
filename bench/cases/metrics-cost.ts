/**
 * What metrics cost a request: the compiled binary in workspace mode with `SERVICE_METRICS=1`
 * against the same binary with metrics off, in the same rounds: `GET /health` and a read route
 * (`GET /workspace/:id/config` on the bench workspace). Target: on ÷ off ≥ 0.95 for each.
 *
 * The "on" server is scraped once a second during the rounds, as Prometheus would, so the cost of
 * rendering the registry (and the gauges' reads) is inside the figure.
 */
import { join } from 'node:path'
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { benchReadPaths, populateBenchWorkspace } from '../lib/bench-workspace.ts'
import { makeFigure } from '../lib/figure.ts'
import { BENCH_CLIENT_TOKEN } from '../lib/product-server.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'

const TARGET = { op: '>=' as const, value: 0.95 }

async function run(ctx: BenchContext): Promise<void> {
  const bin = await ctx.productBinary()
  if (!bin) {
    ctx.skip('binary', 'no product binary')
    return
  }
  const s = ctx.settings
  const servers: RunningServer[] = []
  let scraper: ReturnType<typeof setInterval> | undefined
  try {
    const start = async (name: string, env: Record<string, string>) => {
      const dir = ctx.tempDir(`metrics-cost-${name}`)
      const cmd = ctx.productCommand('binary', dir, bin, 'workspace')
      populateBenchWorkspace(join(dir, 'ws'))
      const server = await startServer({ ...cmd, label: `ours(${name})`, env: { ...cmd.env, ...env } })
      servers.push(server)
      return server
    }
    const off = await start('metrics-off', {})
    const on = await start('metrics-on', { SERVICE_METRICS: '1' })
    const headers = { authorization: `Bearer ${BENCH_CLIENT_TOKEN}` }
    const idOf = async (server: RunningServer) =>
      ((await (await fetch(`${server.baseUrl}/workspaces`, { headers })).json()) as { items: Array<{ id: string }> })
        .items[0]!.id
    const configPath = (id: string) => benchReadPaths(id).find((p) => p.endsWith('/config'))!
    const offRead = configPath(await idOf(off))
    const onRead = configPath(await idOf(on))
    const scrape = await fetch(`${on.baseUrl}/metrics`)
    if (scrape.status !== 200) throw new Error(`GET /metrics answered ${scrape.status} with metrics on`)
    if ((await fetch(`${off.baseUrl}/metrics`)).status !== 404) throw new Error('metrics should be off by default')
    scraper = setInterval(() => {
      fetch(`${on.baseUrl}/metrics`)
        .then((r) => r.arrayBuffer())
        .catch(() => {})
    }, 1000)
    const targets: LoadTarget[] = [
      { key: 'health-off', url: `${off.baseUrl}/health` },
      { key: 'health-on', url: `${on.baseUrl}/health` },
      { key: 'read-off', url: `${off.baseUrl}${offRead}`, headers },
      { key: 'read-on', url: `${on.baseUrl}${onRead}`, headers },
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => {
        printRound('/health, metrics on ÷ off', r, s.rounds, res['health-on']!.rps, res['health-off']!.rps, 'req/s')
        printRound('config read, metrics on ÷ off', r, s.rounds, res['read-on']!.rps, res['read-off']!.rps, 'req/s')
      },
    })
    for (const [name, key] of [
      ['GET /health req/s, metrics on ÷ off', 'health'],
      ['GET /workspace/:id/config req/s, metrics on ÷ off', 'read'],
    ] as const) {
      const mine = results[`${key}-on`]!
      const base = results[`${key}-off`]!
      const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = mine.reduce((a, x) => a + x.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'metrics-cost',
          name,
          unit: 'req/s',
          subject: 'dist/service-server --mode workspace, SERVICE_METRICS=1, scraped every second',
          baselineLabel: 'the same binary with metrics off',
          rounds: mine.map((x, i) => ({ baseline: base[i]!.rps, ours: x.rps })),
          target: TARGET,
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [`${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement`],
        }),
      )
    }
  } finally {
    if (scraper) clearInterval(scraper)
    for (const server of servers) await server.stop()
  }
}

export default defineCase({
  name: 'metrics-cost',
  description: 'GET /health and a read route with metrics on ÷ off, same binary, same rounds; target ≥ 0.95',
  run,
})
