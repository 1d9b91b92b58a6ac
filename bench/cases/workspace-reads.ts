/**
 * Workspace read routes per second as ratios to the minimal Bun.serve JSON handler measured in
 * the same run: `GET /workspaces`, `/workspace/:id/config`, `/skills`, `/commands`, `/mcp` on a
 * workspace with 20 skills, 20 commands, MCP entries and plugins. Target: each ≥ 0.5.
 *
 * Why these: they are what clients poll, and their cost is parsing files; the server keeps
 * parsed views cached until the watcher or a write invalidates them, so each should cost about
 * as much as a route that builds a small JSON body from memory.
 */
import { join } from 'node:path'
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { benchReadPaths, populateBenchWorkspace } from '../lib/bench-workspace.ts'
import { makeFigure } from '../lib/figure.ts'
import { BENCH_CLIENT_TOKEN } from '../lib/product-server.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const TARGET = { op: '>=' as const, value: 0.5 }

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('workspace-reads')
  const cmd = ctx.productCommand('source', dir, undefined, 'workspace')
  populateBenchWorkspace(join(dir, 'ws'))
  const servers: RunningServer[] = []
  try {
    const baseline = await startServer(ctx.baselineCommand())
    servers.push(baseline)
    const ours = await startServer(cmd)
    servers.push(ours)
    const headers = { authorization: `Bearer ${BENCH_CLIENT_TOKEN}` }
    const list = await fetch(`${ours.baseUrl}/workspaces`, { headers })
    if (list.status !== 200)
      throw new Error(`GET /workspaces answered ${list.status}: ${(await list.text()).slice(0, 200)}`)
    const id = ((await list.json()) as { items: Array<{ id: string }> }).items[0]!.id
    const paths = benchReadPaths(id)
    for (const path of paths) {
      const res = await fetch(`${ours.baseUrl}${path}`, { headers })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${text.slice(0, 200)}`)
      if (path.endsWith('/skills') && (JSON.parse(text) as { items: unknown[] }).items.length !== 20)
        throw new Error('bench workspace should list 20 skills')
    }
    const targets: LoadTarget[] = [
      { key: 'baseline', url: `${baseline.baseUrl}/` },
      ...paths.map((path) => ({ key: path, url: `${ours.baseUrl}${path}`, headers })),
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => {
        for (const path of paths)
          printRound(path.replace(id, ':id'), r, s.rounds, res[path]!.rps, res.baseline!.rps, 'req/s')
      },
    })
    for (const path of paths) {
      const mine = results[path]!
      const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = mine.reduce((a, x) => a + x.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'workspace-reads',
          name: `GET ${path.replace(id, ':id')} req/s`,
          unit: 'req/s',
          subject: 'bun bin/service-server.ts (20 skills, 20 commands, 5 MCP)',
          baselineLabel: 'Bun.serve JSON',
          rounds: mine.map((x, i) => ({ baseline: results.baseline![i]!.rps, ours: x.rps })),
          target: TARGET,
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p99 ours ${round(median(mine.map((x) => x.latencyP99Ms)))} ms`,
          ],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'workspace-reads',
  description:
    'GET /workspaces, config, skills, commands, mcp req/s vs Bun.serve JSON baseline; target ratio >= 0.5 each',
  run,
})
