/**
 * Resident memory (VmRSS) of the compiled binary in `--mode workspace` after the standard load run,
 * next to the compiled hello-world after the same load. Target (issue 15 item 6): ours ≤ 60 MB.
 *
 * The standard load run: the bench workspace (lib/bench-workspace.ts: 20 skills, 20 commands, MCP
 * and plugins), its five read routes one after the other, each for `--duration` seconds with
 * `--connections` keep-alive connections, then 1 s idle, then /proc/<pid>/status. Hello-world gets
 * five runs of the same length and connections on `/`. These are the routes clients poll, so the
 * figure is what a desktop server settles at once its parsed views, JIT code and request buffers
 * exist, not a start-up peak.
 *
 * Method as in idle-rss: every binary dropped from the page cache, one unmeasured start each, then
 * `rounds` interleaved pairs (order flipped each round), a fresh process per measurement.
 */
import { join } from 'node:path'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { benchReadPaths, populateBenchWorkspace } from '../lib/bench-workspace.ts'
import { makeFigure, type RoundPair } from '../lib/figure.ts'
import { runLoad } from '../lib/load-driver.ts'
import { evictFromPageCache } from '../lib/page-cache.ts'
import { BENCH_CLIENT_TOKEN } from '../lib/product-server.ts'
import { printRound } from '../lib/results-printer.ts'
import { readProcMemory, type ProcMemory } from '../lib/rss.ts'
import type { RunningServer, ServerCommand } from '../lib/server-process.ts'
import { timeToFirstOk } from '../lib/start-timer.ts'
import { median, round, sleep } from '../lib/stats.ts'

const OURS_TARGET = { op: '<=' as const, value: 60 }
const IDLE_MS = 1000
const HEADERS = { authorization: `Bearer ${BENCH_CLIENT_TOKEN}` }

interface Measured {
  mem: ProcMemory
  requests: number
  bad: number
}

/** The URLs of the standard load for a running server: ours' five read routes, or hello's `/` five times. */
async function loadUrls(server: RunningServer, ours: boolean): Promise<string[]> {
  if (!ours) return Array.from({ length: 5 }, () => `${server.baseUrl}/`)
  const res = await fetch(`${server.baseUrl}/workspaces`, { headers: HEADERS })
  if (res.status !== 200) throw new Error(`GET /workspaces answered ${res.status}: ${(await res.text()).slice(0, 200)}`)
  const id = ((await res.json()) as { items: Array<{ id: string }> }).items[0]!.id
  return benchReadPaths(id).map((path) => `${server.baseUrl}${path}`)
}

async function measure(ctx: BenchContext, cmd: ServerCommand, ours: boolean): Promise<Measured> {
  let measured: Measured | null = null
  await timeToFirstOk(cmd, '/health', 15_000, async (server) => {
    let requests = 0
    let bad = 0
    for (const url of await loadUrls(server, ours)) {
      const result = await runLoad({
        url,
        durationSec: ctx.settings.durationSec,
        connections: ctx.settings.connections,
        tool: ctx.settings.tool,
        headers: ours ? HEADERS : undefined,
      })
      requests += result.requests
      bad += result.non2xx + result.errors
    }
    await sleep(IDLE_MS)
    const mem = readProcMemory(server.pid)
    if (mem) measured = { mem, requests, bad }
  })
  if (!measured) throw new Error(`cannot read /proc/<pid>/status for ${cmd.label}`)
  return measured
}

const mb = (kb: number | null) => round((kb ?? 0) / 1024, 1)

async function run(ctx: BenchContext): Promise<void> {
  if (!readProcMemory(process.pid)) {
    ctx.skip('load-rss', '/proc/<pid>/status not readable (not Linux?)')
    return
  }
  const bin = await ctx.productBinary()
  if (!bin) {
    ctx.skip('load-rss', 'no product binary')
    return
  }
  const helloBin = await ctx.helloBinary()
  for (const path of [helloBin, bin])
    if (!evictFromPageCache(path)) ctx.log(`could not drop ${path} from the page cache; figures depend on its history`)
  const hello = ctx.helloCommand(helloBin)
  const dir = ctx.tempDir('load-rss')
  const ours = ctx.productCommand('binary', dir, bin, 'workspace')
  populateBenchWorkspace(join(dir, 'ws'))
  for (const cmd of [hello, ours]) await timeToFirstOk(cmd)

  const rounds: RoundPair[] = []
  const split = {
    oursAnon: [] as number[],
    oursFile: [] as number[],
    helloAnon: [] as number[],
    helloFile: [] as number[],
  }
  let requests = 0
  let bad = 0
  for (let i = 0; i < ctx.settings.rounds; i++) {
    const got = new Map<ServerCommand, Measured>()
    for (const cmd of i % 2 === 0 ? [hello, ours] : [ours, hello]) got.set(cmd, await measure(ctx, cmd, cmd === ours))
    const h = got.get(hello)!
    const o = got.get(ours)!
    requests += o.requests
    bad += o.bad
    rounds.push({ baseline: h.mem.vmRssKb / 1024, ours: o.mem.vmRssKb / 1024 })
    split.oursAnon.push(mb(o.mem.rssAnonKb))
    split.oursFile.push(mb(o.mem.rssFileKb))
    split.helloAnon.push(mb(h.mem.rssAnonKb))
    split.helloFile.push(mb(h.mem.rssFileKb))
    printRound('load-rss', i, ctx.settings.rounds, o.mem.vmRssKb / 1024, h.mem.vmRssKb / 1024, 'MB')
  }
  const s = ctx.settings
  ctx.record(
    makeFigure({
      caseName: 'load-rss',
      name: `VmRSS after the standard load run + ${IDLE_MS / 1000} s (binary, workspace)`,
      unit: 'MB',
      subject: 'dist/service-server --mode workspace (bench workspace, 5 read routes)',
      baselineLabel: 'compiled hello.ts, same load on /',
      rounds,
      oursTarget: OURS_TARGET,
      invalidReason: bad > requests * 0.001 ? `${bad} of ${requests} requests were non-2xx or errors` : undefined,
      notes: [
        `load: 5 routes × ${s.durationSec} s, ${s.connections} connections, ${s.tool}; ${requests} requests to ours in all`,
        `anon/file-backed: ours ${round(median(split.oursAnon), 1)}/${round(median(split.oursFile), 1)} MB, hello ${round(median(split.helloAnon), 1)}/${round(median(split.helloFile), 1)} MB`,
      ],
      extra: split,
    }),
  )
}

export default defineCase({
  name: 'load-rss',
  description:
    'compiled binary VmRSS after the standard workspace load run vs hello-world after the same; target ours <= 60 MB',
  run,
})
