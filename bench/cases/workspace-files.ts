/**
 * The file data plane against in-process and command-line references measured in the same run:
 *
 * - read-batch throughput: file bytes delivered per second by `POST …/read-batch` of 64 × 16 KiB
 *   files (load from the load driver, several connections), as a ratio to reading and
 *   base64-encoding the same 64 files in this process in a loop. Target ≥ 0.5.
 * - catalog snapshot: wall time to page through a 100,000-file tree with
 *   `GET …/catalog/snapshot?limit=10000`, as a ratio to `find <dir> -printf '%P %s %T@\n'` on the
 *   same tree. Target ≤ 2.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { runLoad } from '../lib/load-driver.ts'
import { BENCH_CLIENT_TOKEN } from '../lib/product-server.ts'
import { printRound } from '../lib/results-printer.ts'
import { runCommand } from '../lib/run-command.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const READ_FILES = 64
const READ_BYTES = 16 * 1024
const CATALOG_DIRS = 100
const CATALOG_PER_DIR = 1000

function populate(ws: string): void {
  mkdirSync(join(ws, 'batch'), { recursive: true })
  for (let i = 0; i < READ_FILES; i++) writeFileSync(join(ws, 'batch', `f${i}.bin`), Buffer.alloc(READ_BYTES, i))
  for (let d = 0; d < CATALOG_DIRS; d++) {
    const dir = join(ws, 'tree', `d${String(d).padStart(3, '0')}`)
    mkdirSync(dir, { recursive: true })
    for (let f = 0; f < CATALOG_PER_DIR; f++) writeFileSync(join(dir, `f${String(f).padStart(4, '0')}.txt`), 'x')
  }
}

/** In-process reference: read and base64-encode the 64 files repeatedly for `seconds`. */
function inProcessBytesPerSecond(ws: string, seconds: number): number {
  const paths = Array.from({ length: READ_FILES }, (_, i) => join(ws, 'batch', `f${i}.bin`))
  const started = performance.now()
  let bytes = 0
  let sink = 0
  while (performance.now() - started < seconds * 1000) {
    for (const p of paths) {
      const data = readFileSync(p)
      sink += data.toString('base64').length
      bytes += data.byteLength
    }
  }
  if (sink === 0) throw new Error('nothing read')
  return bytes / ((performance.now() - started) / 1000)
}

async function catalogMs(base: string, sessionId: string, expected: number): Promise<number> {
  const started = performance.now()
  let after = ''
  let count = 0
  for (;;) {
    const res = await fetch(
      `${base}/files/sessions/${sessionId}/catalog/snapshot?prefix=tree&limit=10000${after ? `&after=${encodeURIComponent(after)}` : ''}`,
      { headers: { authorization: `Bearer ${BENCH_CLIENT_TOKEN}` } },
    )
    const page = (await res.json()) as { items: unknown[]; truncated: boolean; nextAfter?: string }
    count += page.items.length
    if (!page.truncated) break
    after = page.nextAfter!
  }
  const ms = performance.now() - started
  if (count !== expected) throw new Error(`catalog listed ${count} files, expected ${expected}`)
  return ms
}

async function findMs(dir: string, expected: number): Promise<number> {
  const started = performance.now()
  const res = await runCommand('find', [dir, '-type', 'f', '-printf', '%P %s %T@\n'], { timeoutMs: 120_000 })
  const ms = performance.now() - started
  const lines = res.stdout.split('\n').filter(Boolean).length
  if (res.code !== 0 || lines !== expected) throw new Error(`find failed or listed ${lines} files`)
  return ms
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('workspace-files')
  const cmd = ctx.productCommand('source', dir, undefined, 'workspace')
  const ws = join(dir, 'ws')
  ctx.log(`creating ${READ_FILES} × 16 KiB files and a ${CATALOG_DIRS * CATALOG_PER_DIR}-file tree`)
  populate(ws)
  let server: RunningServer | undefined
  try {
    server = await startServer(cmd)
    const headers = { authorization: `Bearer ${BENCH_CLIENT_TOKEN}`, 'content-type': 'application/json' }
    const id = (
      (await (await fetch(`${server.baseUrl}/workspaces`, { headers })).json()) as { items: Array<{ id: string }> }
    ).items[0]!.id
    const session = (
      (await (
        await fetch(`${server.baseUrl}/workspace/${id}/files/sessions`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ ttlSeconds: 3600, write: false }),
        })
      ).json()) as { session: { id: string } }
    ).session.id
    const body = JSON.stringify({ paths: Array.from({ length: READ_FILES }, (_, i) => `batch/f${i}.bin`) })
    const url = `${server.baseUrl}/files/sessions/${session}/read-batch`
    const check = (await (await fetch(url, { method: 'POST', headers, body })).json()) as {
      items: Array<{ ok: boolean; bytes: number }>
    }
    if (check.items.length !== READ_FILES || !check.items.every((i) => i.ok && i.bytes === READ_BYTES))
      throw new Error('read-batch did not return the 64 files')

    const connections = Math.min(s.connections, 8)
    if (s.warmupSec > 0)
      await runLoad({ url, durationSec: s.warmupSec, connections, method: 'POST', headers, body, tool: s.tool })
    const readRounds: Array<{ baseline: number; ours: number }> = []
    let bad = 0
    let total = 0
    for (let r = 0; r < s.rounds; r++) {
      const measure = async () => {
        const res = await runLoad({
          url,
          durationSec: s.durationSec,
          connections,
          method: 'POST',
          headers,
          body,
          tool: s.tool,
        })
        bad += res.non2xx + res.errors
        total += res.requests
        return res.rps * READ_FILES * READ_BYTES
      }
      const local = () => inProcessBytesPerSecond(ws, s.durationSec)
      let ours: number
      let baseline: number
      if (r % 2 === 0) {
        baseline = local()
        ours = await measure()
      } else {
        ours = await measure()
        baseline = local()
      }
      readRounds.push({ baseline, ours })
      printRound('read-batch bytes/s', r, s.rounds, ours, baseline, 'B/s')
    }
    ctx.record(
      makeFigure({
        caseName: 'workspace-files',
        name: 'read-batch file bytes/s (64 × 16 KiB)',
        unit: 'B/s',
        subject: `bun bin/service-server.ts, ${connections} connections`,
        baselineLabel: 'readFileSync + base64 in-process',
        rounds: readRounds,
        target: { op: '>=', value: 0.5 },
        invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
        notes: [
          `${s.tool}; MB/s ours ${round(median(readRounds.map((x) => x.ours)) / 1e6)}, in-process ${round(median(readRounds.map((x) => x.baseline)) / 1e6)}`,
        ],
      }),
    )

    const expected = CATALOG_DIRS * CATALOG_PER_DIR
    await catalogMs(server.baseUrl, session, expected)
    await findMs(join(ws, 'tree'), expected)
    const catalogRounds: Array<{ baseline: number; ours: number }> = []
    for (let r = 0; r < s.rounds; r++) {
      let ours: number
      let baseline: number
      if (r % 2 === 0) {
        baseline = await findMs(join(ws, 'tree'), expected)
        ours = await catalogMs(server.baseUrl, session, expected)
      } else {
        ours = await catalogMs(server.baseUrl, session, expected)
        baseline = await findMs(join(ws, 'tree'), expected)
      }
      catalogRounds.push({ baseline, ours })
      printRound('catalog 100k ms', r, s.rounds, ours, baseline, 'ms')
    }
    ctx.record(
      makeFigure({
        caseName: 'workspace-files',
        name: 'catalog snapshot of 100,000 files (10 pages) ms',
        unit: 'ms',
        subject: 'GET …/catalog/snapshot?limit=10000, all pages',
        baselineLabel: "find <dir> -type f -printf '%P %s %T@\\n'",
        rounds: catalogRounds,
        target: { op: '<=', value: 2 },
      }),
    )
  } finally {
    await server?.stop()
  }
}

export default defineCase({
  name: 'workspace-files',
  description:
    'read-batch bytes/s vs in-process read+base64 (target >= 0.5); 100k-file catalog vs find -printf (target <= 2)',
  run,
})
