/**
 * Idle resident memory (VmRSS) of the compiled product binary after start, a
 * few requests and 1 s idle, as a ratio to the compiled hello-world after the
 * same treatment. Target: ≤ 1.5×.
 *
 * Method: every binary is first dropped from the page cache (lib/page-cache.ts)
 * and the unmeasured first start faults in what it uses, as for an installed
 * binary; then `rounds` pairs, interleaved, order flipped each pair; every
 * measurement is a fresh process: start → first 200 on /health → 20 more
 * sequential GET /health → 1 s idle → read /proc/<pid>/status. Ratio per pair
 * = ours / hello. Issue 15 item 6 also bounds ours alone: ≤ 40 MB. Two floors are measured in
 * each pair too and recorded as informational figures: the module floor (bench/module-floor.ts:
 * our workspace module graph evaluated, nothing started) and the work floor (bench/work-floor.ts:
 * the same start-up work written directly on Bun, no layer of ours, with the product's flags).
 */
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure, type RoundPair } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { readProcMemory, type ProcMemory } from '../lib/rss.ts'
import type { ServerCommand } from '../lib/server-process.ts'
import { timeToFirstOk } from '../lib/start-timer.ts'
import { evictFromPageCache } from '../lib/page-cache.ts'
import { median, round, sleep } from '../lib/stats.ts'

const TARGET = { op: '<=' as const, value: 1.5 }
const OURS_TARGET = { op: '<=' as const, value: 40 }
const REQUESTS = 20
const IDLE_MS = 1000

async function measure(cmd: ServerCommand): Promise<ProcMemory> {
  let mem: ProcMemory | null = null
  await timeToFirstOk(cmd, '/health', 15_000, async (server) => {
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(`${server.baseUrl}/health`)
      await res.arrayBuffer()
    }
    await sleep(IDLE_MS)
    mem = readProcMemory(server.pid)
  })
  if (!mem) throw new Error(`cannot read /proc/<pid>/status for ${cmd.label}`)
  return mem
}

async function run(ctx: BenchContext): Promise<void> {
  if (!readProcMemory(process.pid)) {
    ctx.skip('idle-rss', '/proc/<pid>/status not readable (not Linux?)')
    return
  }
  const bin = await ctx.productBinary()
  if (!bin) {
    ctx.skip('idle-rss', 'no product binary')
    return
  }
  const helloBin = await ctx.helloBinary()
  const floorBin = await ctx.floorBinary()
  const workFloorBin = await ctx.workFloorBinary()
  for (const path of [helloBin, floorBin, workFloorBin, bin])
    if (!evictFromPageCache(path)) ctx.log(`could not drop ${path} from the page cache; figures depend on its history`)
  const hello = ctx.helloCommand(helloBin)
  const floor = ctx.floorCommand(floorBin)
  const ours = ctx.productCommand('binary', ctx.tempDir('rss'), bin)
  const work = { ...ctx.productCommand('binary', ctx.tempDir('rss-work'), workFloorBin), label: 'work-floor(binary)' }
  // First starts: the product creates its data dir (measured starts are restarts, as in start-time),
  // and each binary faults in from disk what it uses.
  for (const cmd of [hello, floor, work, ours]) await timeToFirstOk(cmd)

  const rounds: RoundPair[] = []
  const floorRounds: RoundPair[] = []
  const workRounds: RoundPair[] = []
  const hwm: { ours: number[]; hello: number[] } = { ours: [], hello: [] }
  const split = {
    oursAnon: [] as number[],
    oursFile: [] as number[],
    helloAnon: [] as number[],
    helloFile: [] as number[],
  }
  const mb = (kb: number | null) => round((kb ?? 0) / 1024, 1)
  for (let i = 0; i < ctx.settings.rounds; i++) {
    const got = new Map<ServerCommand, ProcMemory>()
    for (const cmd of i % 2 === 0 ? [hello, floor, work, ours] : [ours, work, floor, hello])
      got.set(cmd, await measure(cmd))
    const h = got.get(hello)!
    const o = got.get(ours)!
    rounds.push({ baseline: h.vmRssKb / 1024, ours: o.vmRssKb / 1024 })
    floorRounds.push({ baseline: h.vmRssKb / 1024, ours: got.get(floor)!.vmRssKb / 1024 })
    workRounds.push({ baseline: h.vmRssKb / 1024, ours: got.get(work)!.vmRssKb / 1024 })
    if (h.vmHwmKb) hwm.hello.push(h.vmHwmKb / 1024)
    if (o.vmHwmKb) hwm.ours.push(o.vmHwmKb / 1024)
    split.oursAnon.push(mb(o.rssAnonKb))
    split.oursFile.push(mb(o.rssFileKb))
    split.helloAnon.push(mb(h.rssAnonKb))
    split.helloFile.push(mb(h.rssFileKb))
    printRound('idle-rss', i, ctx.settings.rounds, o.vmRssKb / 1024, h.vmRssKb / 1024, 'MB')
  }
  ctx.record(
    makeFigure({
      caseName: 'idle-rss',
      name: `idle VmRSS after ${REQUESTS} req + ${IDLE_MS / 1000} s (binary)`,
      unit: 'MB',
      subject: 'dist/service-server',
      baselineLabel: 'compiled hello.ts',
      rounds,
      target: TARGET,
      oursTarget: OURS_TARGET,
      notes: [
        `peak VmHWM: ours ${round(median(hwm.ours), 1)} MB vs hello ${round(median(hwm.hello), 1)} MB`,
        `anon/file-backed: ours ${round(median(split.oursAnon), 1)}/${round(median(split.oursFile), 1)} MB, hello ${round(median(split.helloAnon), 1)}/${round(median(split.helloFile), 1)} MB`,
      ],
      extra: {
        oursVmHwmMb: hwm.ours.map((x) => round(x, 1)),
        helloVmHwmMb: hwm.hello.map((x) => round(x, 1)),
        ...split,
      },
    }),
  )
  ctx.record(
    makeFigure({
      caseName: 'idle-rss',
      name: `module floor: idle VmRSS after ${REQUESTS} req + ${IDLE_MS / 1000} s (binary)`,
      unit: 'MB',
      subject: 'bench/module-floor.ts: workspace module graph evaluated, nothing started',
      baselineLabel: 'compiled hello.ts',
      rounds: floorRounds,
      notes: [
        'informational: loading our code alone; the gap between it and the product is start-up work (SQLite, watchers, routes)',
      ],
    }),
  )
  ctx.record(
    makeFigure({
      caseName: 'idle-rss',
      name: `work floor: idle VmRSS after ${REQUESTS} req + ${IDLE_MS / 1000} s (binary)`,
      unit: 'MB',
      subject: 'bench/work-floor.ts: the workspace start-up work directly on Bun, no layer of ours',
      baselineLabel: 'compiled hello.ts',
      rounds: workRounds,
      notes: [
        'informational: the runtime doing our start-up work (config, SQLite, snapshot, watcher, listener); the gap between it and the product is our layers',
      ],
    }),
  )
}

export default defineCase({
  name: 'idle-rss',
  description: 'compiled binary idle VmRSS vs compiled hello-world; target ratio <= 1.5 and ours <= 40 MB',
  run,
})
