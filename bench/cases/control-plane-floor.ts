/**
 * The control plane against its stack floor, in the same run (issue 15 items 2, 3 and 7).
 *
 * Ours: the compiled binary (`dist/service-server --mode control-plane`) on SQLite, with the
 * `control-plane-world` organization built through its API (2,000 config objects, 500 of them
 * skills the owner holds grants on, 1,000 members). Floor: `bench/floor-server.ts`, the same
 * session lookup, keyset pages and create inserts written directly on bun:sqlite, serving the same
 * database file. Every figure is ours ÷ floor per round (median of rounds):
 * - `GET /v1/me`, `GET /v1/config-objects?type=skill&limit=50`, `GET /v1/members?limit=50` and
 *   `GET /v1/me/skills?limit=50` req/s: target ≥ 0.7;
 * - `POST /v1/config-objects` (a skill with its first version, search terms, grant, audit and
 *   change-feed rows in one transaction) req/s at 16 connections: target ≥ 0.5;
 * - `GET /health` req/s against `bench/ceiling-server.ts` (same body, nosniff, and the request id
 *   by the same rule): target ≥ 0.95, in three times as many rounds (see below); for the record,
 *   against the same ceiling with `--no-echo` (always a fresh id, the header never read); and a
 *   second copy of the ceiling against the first, which shows how far this machine moves a
 *   median for identical code, in the same rounds.
 */
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { buildWorld, createBody, READ_PATHS } from '../lib/control-plane-world.ts'
import { runAlternatingRounds, type LoadTarget, type MeasuredLoad } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import type { LoadResult } from '../lib/load-driver.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer, type ServerCommand } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const CREATE_CONNECTIONS = 16

async function ok(res: Response, what: string): Promise<string> {
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`)
  return text
}

/** A bun script from bench/ started like the baseline (same bun, port 0, its own stderr file). */
function benchScript(ctx: BenchContext, label: string, script: string, extra: string[] = []): ServerCommand {
  const base = ctx.baselineCommand()
  return {
    ...base,
    label,
    stderrFile: base.stderrFile?.replace(/baseline(?=[^/]*$)/, label),
    args: [fileURLToPath(new URL(`../${script}`, import.meta.url)), ...extra, ...base.args.slice(1)],
  }
}

function record(
  ctx: BenchContext,
  label: string,
  results: Record<string, LoadResult[]>,
  key: string,
  floorKey: string,
  floorLabel: string,
  target: number | undefined,
  connections: number,
  extraNotes: string[] = [],
  subject = 'dist/service-server --mode control-plane (SQLite)',
): void {
  const mine = results[key]!
  const floor = results[floorKey]!
  const bad = [...mine, ...floor].reduce((a, x) => a + x.non2xx + x.errors, 0)
  const total = [...mine, ...floor].reduce((a, x) => a + x.requests, 0)
  ctx.record(
    makeFigure({
      caseName: 'control-plane-floor',
      name: `${label} req/s`,
      unit: 'req/s',
      subject,
      baselineLabel: floorLabel,
      rounds: mine.map((x, i) => ({ baseline: floor[i]!.rps, ours: x.rps })),
      target: target === undefined ? undefined : { op: '>=', value: target },
      invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
      notes: [
        `${ctx.settings.tool}, ${connections} connections, ${ctx.settings.durationSec} s per measurement; p50 ours ${round(median(mine.map((x) => x.latencyP50Ms)), 2)} ms, floor ${round(median(floor.map((x) => x.latencyP50Ms)), 2)} ms`,
        ...extraNotes,
      ],
    }),
  )
}

/**
 * Median CPU per request of each server (whole process, from procfs): steadier than req/s on a
 * shared VM, so it tells a costlier server from a noisy round.
 */
function cpuNote(results: Record<string, MeasuredLoad[]>, keys: string[]): string {
  const parts = keys.map((key) => {
    const values = results[key]!.map((x) => x.cpuMicrosPerRequest).filter((x): x is number => x !== undefined)
    return `${key.replace(/ GET \/health$/, '')} ${values.length ? round(median(values), 2) : '?'} µs`
  })
  return `CPU per request, median: ${parts.join(', ')}`
}

async function run(ctx: BenchContext): Promise<void> {
  const bin = await ctx.productBinary()
  if (!bin) {
    ctx.skip('binary', 'no product binary')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('control-plane-floor')
  const databasePath = join(dir, 'control-plane.sqlite')
  const servers: RunningServer[] = []
  try {
    const ours = await startServer(ctx.productCommand('binary', dir, bin, 'control-plane'))
    servers.push(ours)
    const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${ours.baseUrl}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    const world = await buildWorld(send, databasePath, ctx.log)
    const floor = await startServer(benchScript(ctx, 'floor', 'floor-server.ts', ['--database', databasePath]))
    servers.push(floor)
    const ceiling = await startServer(benchScript(ctx, 'ceiling', 'ceiling-server.ts'))
    servers.push(ceiling)
    const freshIdCeiling = await startServer(benchScript(ctx, 'fresh-id-ceiling', 'ceiling-server.ts', ['--no-echo']))
    servers.push(freshIdCeiling)
    const ceilingCopy = await startServer(benchScript(ctx, 'ceiling-copy', 'ceiling-server.ts'))
    servers.push(ceilingCopy)
    // Both sides must answer every path with a 200 (and the same number of items) before load.
    for (const [label, path] of Object.entries(READ_PATHS)) {
      const a = JSON.parse(await ok(await send('GET', path, undefined, world.headers), `ours ${label}`))
      const b = JSON.parse(
        await ok(await fetch(`${floor.baseUrl}${path}`, { headers: world.headers }), `floor ${label}`),
      )
      if (a.items && a.items.length !== b.items?.length)
        throw new Error(`${label}: ours returned ${a.items.length} items, the floor ${b.items?.length}`)
    }
    await ok(await fetch(`${ours.baseUrl}/health`), 'ours /health')
    // /health is timed in rounds of its own, three times as many: each request costs about 10 µs,
    // so a neighbour's burst on this shared VM moves a 2-second round by up to ±30 %, and a median
    // of five such rounds flips around the target while a median of fifteen holds. The target's
    // ceiling chooses the request id by our rule (echo a safe client id, else a fresh one); the
    // one that always makes a fresh id, as first written, is measured beside it for the record.
    // A second copy of the ceiling runs in the same rounds, next to the ceiling in the order, so
    // each run also shows what ratio identical code gets: the resolution of the 0.95 target here.
    const healthRounds = s.rounds * 3
    const OURS = 'ours GET /health'
    const CEILING = 'ceiling GET /health'
    const COPY = 'ceiling copy GET /health'
    const FRESH = 'fresh-id ceiling GET /health'
    const healthFigures = [
      { label: 'GET /health', key: OURS, base: CEILING, baseLabel: 'bench/ceiling-server.ts', target: 0.95 },
      {
        label: 'GET /health (vs a ceiling that never reads X-Request-Id)',
        key: OURS,
        base: FRESH,
        baseLabel: 'bench/ceiling-server.ts --no-echo',
      },
      {
        label: 'GET /health, identical code (a second ceiling ÷ the ceiling)',
        key: COPY,
        base: CEILING,
        baseLabel: 'bench/ceiling-server.ts',
        subject: 'bench/ceiling-server.ts (a second process)',
        notes: [
          'informational: the same server twice; how far from 1.0 a median of these rounds lands on this machine',
        ],
      },
    ]
    const health = await runAlternatingRounds(
      [
        { key: OURS, url: `${ours.baseUrl}/health`, pid: ours.pid },
        { key: CEILING, url: `${ceiling.baseUrl}/health`, pid: ceiling.pid },
        { key: COPY, url: `${ceilingCopy.baseUrl}/health`, pid: ceilingCopy.pid },
        { key: FRESH, url: `${freshIdCeiling.baseUrl}/health`, pid: freshIdCeiling.pid },
      ],
      {
        ...s,
        rounds: healthRounds,
        onRound: (r, res) => {
          for (const f of healthFigures)
            printRound(f.label, r, healthRounds, res[f.key]!.rps, res[f.base]!.rps, 'req/s')
        },
      },
    )
    const cpu = cpuNote(health, [OURS, CEILING, COPY, FRESH])
    for (const f of healthFigures) {
      record(
        ctx,
        f.label,
        health,
        f.key,
        f.base,
        f.baseLabel,
        f.target,
        s.connections,
        [...(f.notes ?? []), ...(f.target ? [cpu] : [])],
        f.subject,
      )
    }
    const readTargets: LoadTarget[] = [
      ...Object.entries(READ_PATHS).flatMap(([label, path]) => [
        { key: `ours ${label}`, url: `${ours.baseUrl}${path}`, headers: world.headers },
        { key: `floor ${label}`, url: `${floor.baseUrl}${path}`, headers: world.headers },
      ]),
    ]
    const reads = await runAlternatingRounds(readTargets, {
      ...s,
      onRound: (r, res) => {
        for (const label of Object.keys(READ_PATHS))
          printRound(label, r, s.rounds, res[`ours ${label}`]!.rps, res[`floor ${label}`]!.rps, 'req/s')
      },
    })
    for (const label of Object.keys(READ_PATHS))
      record(
        ctx,
        label,
        reads,
        `ours ${label}`,
        `floor ${label}`,
        'floor (bun:sqlite, no framework)',
        0.7,
        s.connections,
      )

    const body = JSON.stringify(createBody(0, 'load'))
    const createHeaders = { ...world.headers, 'content-type': 'application/json' }
    const creates = await runAlternatingRounds(
      [
        { key: 'ours create', url: `${ours.baseUrl}/v1/config-objects`, method: 'POST', headers: createHeaders, body },
        {
          key: 'floor create',
          url: `${floor.baseUrl}/v1/config-objects`,
          method: 'POST',
          headers: createHeaders,
          body,
        },
      ],
      {
        ...s,
        connections: CREATE_CONNECTIONS,
        warmupSec: 0,
        onRound: (r, res) =>
          printRound(
            'POST /v1/config-objects',
            r,
            s.rounds,
            res['ours create']!.rps,
            res['floor create']!.rps,
            'req/s',
          ),
      },
    )
    record(
      ctx,
      'POST /v1/config-objects',
      creates,
      'ours create',
      'floor create',
      'floor (same inserts, one bun:sqlite transaction)',
      0.5,
      CREATE_CONNECTIONS,
    )
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'control-plane-floor',
  description:
    'control-plane reads (≥ 0.7), creates (≥ 0.5) vs a bun:sqlite floor, and /health (≥ 0.95) vs its contract ceiling, same run',
  run,
})
