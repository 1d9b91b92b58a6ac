/**
 * The sidecar proxy against the real OpenCode server (npm `opencode-ai`), same run:
 * 1. `GET /sidecar/global/health` requests per second through the product as a ratio to the same
 *    request sent straight to OpenCode (target ≥ 0.7);
 * 2. time to the first event frame of `GET /sidecar/event` through the proxy vs straight to
 *    OpenCode (informational; one direct and one proxied stream per round, back to back).
 *
 * OpenCode runs with an isolated HOME and everything that would download disabled, on a loopback
 * port with `OPENCODE_SERVER_PASSWORD`; the product is configured with that URL and password.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isolatedOpencodeEnv, OPENCODE_BIN } from '../../src/workspace/sidecar/opencode-env.ts'
import { runAlternatingRounds } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { track } from '../lib/child-registry.ts'
import { makeFigure } from '../lib/figure.ts'
import { BENCH_CLIENT_TOKEN } from '../lib/product-server.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const TARGET = { op: '>=' as const, value: 0.7 }
const PASSWORD = 'bench-opencode-password'
const EVENT_ROUNDS = 15

/** Starts `opencode serve` and resolves with its URL once healthy, plus how long that took. */
async function startOpencode(
  home: string,
  cwd: string,
): Promise<{ child: ChildProcess; url: string; startMs: number }> {
  const started = performance.now()
  const child = track(
    spawn(OPENCODE_BIN, ['serve', '--port', '0', '--hostname', '127.0.0.1'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...isolatedOpencodeEnv(home), OPENCODE_SERVER_PASSWORD: PASSWORD },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  )
  child.stderr!.resume()
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => reject(new Error('opencode did not print its listening line within 60 s')), 60_000)
    child.stdout!.on('data', (d) => {
      buffered += String(d)
      const match = /listening on (http:\/\/\S+)/.exec(buffered)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!.replace(/\/+$/, ''))
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`opencode exited with ${code}`))
    })
  })
  const authorization = `Basic ${btoa(`opencode:${PASSWORD}`)}`
  for (;;) {
    const res = await fetch(`${url}/global/health`, { headers: { authorization } }).catch(() => null)
    if (res?.ok) {
      await res.text()
      break
    }
    if (performance.now() - started > 60_000) throw new Error('opencode did not become healthy')
    await new Promise((r) => setTimeout(r, 50))
  }
  return { child, url, startMs: performance.now() - started }
}

/** Milliseconds until the first `data:` frame of an event stream arrives. */
async function firstEventMs(url: string, headers: Record<string, string>): Promise<number> {
  const started = performance.now()
  const res = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } })
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`)
  const reader = res.body!.getReader()
  let text = ''
  try {
    for (;;) {
      const next = await reader.read()
      if (next.done) throw new Error('event stream ended before its first frame')
      text += new TextDecoder().decode(next.value)
      if (/^data: /m.test(text) && text.includes('\n\n')) return performance.now() - started
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('sidecar-proxy')
  const home = ctx.tempDir('sidecar-opencode-home')
  const cmd = ctx.productCommand('source', dir, undefined, 'workspace')
  const opencode = await startOpencode(home, join(dir, 'ws'))
  ctx.log(`opencode ${opencode.url} healthy ${Math.round(opencode.startMs)} ms after spawn`)
  const servers: RunningServer[] = []
  try {
    const configPath = join(dir, 'server.json')
    const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>
    writeFileSync(
      configPath,
      JSON.stringify({ ...config, sidecar: { baseUrl: opencode.url, password: PASSWORD } }, null, 2),
    )
    const ours = await startServer(cmd)
    servers.push(ours)
    const bearer = { authorization: `Bearer ${BENCH_CLIENT_TOKEN}` }
    const basic = { authorization: `Basic ${btoa(`opencode:${PASSWORD}`)}` }
    const proxied = `${ours.baseUrl}/sidecar/global/health`
    const check = await fetch(proxied, { headers: bearer })
    const checkText = await check.text()
    if (check.status !== 200)
      throw new Error(`GET /sidecar/global/health answered ${check.status}: ${checkText.slice(0, 200)}`)

    ctx.log(`warm-up ${s.warmupSec} s per target, then ${s.rounds} rounds × ${s.durationSec} s`)
    const results = await runAlternatingRounds(
      [
        { key: 'direct', url: `${opencode.url}/global/health`, headers: basic },
        { key: 'proxied', url: proxied, headers: bearer },
      ],
      { ...s, onRound: (r, res) => printRound('proxied', r, s.rounds, res.proxied!.rps, res.direct!.rps, 'req/s') },
    )
    const mine = results.proxied!
    const base = results.direct!
    const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
    const total = mine.reduce((a, x) => a + x.requests, 0)
    ctx.record(
      makeFigure({
        caseName: 'sidecar-proxy',
        name: 'GET /sidecar/global/health req/s (proxied vs direct)',
        unit: 'req/s',
        subject: 'bun bin/service-server.ts → opencode serve',
        baselineLabel: 'opencode serve direct',
        rounds: mine.map((x, i) => ({ baseline: base[i]!.rps, ours: x.rps })),
        target: TARGET,
        invalidReason: bad > total * 0.001 ? `${bad} of ${total} proxied requests were non-2xx or errors` : undefined,
        notes: [
          `${s.tool}, ${s.connections} connections; p99 proxied ${round(median(mine.map((x) => x.latencyP99Ms)), 2)} ms vs direct ${round(median(base.map((x) => x.latencyP99Ms)), 2)} ms`,
          `opencode start to healthy: ${Math.round(opencode.startMs)} ms`,
        ],
        extra: { opencodeStartMs: Math.round(opencode.startMs) },
      }),
    )

    const pairs: Array<{ baseline: number; ours: number }> = []
    for (let i = 0; i < EVENT_ROUNDS; i++) {
      const direct = await firstEventMs(`${opencode.url}/event`, basic)
      const through = await firstEventMs(`${ours.baseUrl}/sidecar/event`, bearer)
      pairs.push(i % 2 ? { baseline: direct, ours: through } : { ours: through, baseline: direct })
    }
    ctx.record(
      makeFigure({
        caseName: 'sidecar-proxy',
        name: 'time to first event, GET /sidecar/event (proxied vs direct)',
        unit: 'ms',
        subject: 'bun bin/service-server.ts → opencode serve',
        baselineLabel: 'opencode serve direct',
        rounds: pairs,
        notes: [
          `${EVENT_ROUNDS} streams each, opened one after the other; ms from request to the first data frame (server.connected)`,
        ],
      }),
    )
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
    opencode.child.kill('SIGTERM')
  }
}

export default defineCase({
  name: 'sidecar-proxy',
  description:
    'GET /sidecar/global/health req/s through the proxy vs straight to opencode (target >= 0.7), and time to first event',
  run,
})
