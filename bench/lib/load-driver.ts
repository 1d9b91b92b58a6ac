/**
 * HTTP load driver: wrk when it is on PATH, else autocannon (run with node).
 *
 * Why: throughput targets are ratios against a baseline measured in the same
 * run, so the driver only has to be consistent, but it should be as cheap as
 * possible so the server, not the client, is the bottleneck. wrk (C, epoll) is
 * far cheaper per request than autocannon (JS) and is preferred; autocannon is
 * the always-available fallback (npm devDependency). Both are run with a hard
 * duration and connection count, against loopback addresses only.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { pinned } from './cpu-pinning.ts'
import { onPath, runCommand } from './run-command.ts'

/** Which client generated the load. */
export type LoadTool = 'wrk' | 'autocannon'

/** One bounded load run. */
export interface LoadOptions {
  /** Full URL; host must be a loopback address. */
  url: string
  /** Whole seconds of load (1–60); wrk cannot do fractions. */
  durationSec: number
  /** Concurrent keep-alive connections (1–1000). */
  connections: number
  /** wrk threads (ignored by autocannon); default: 1 per 4 cores, at least 1, at most 4. */
  threads?: number
  method?: string
  headers?: Record<string, string>
  body?: string
  /**
   * Replace each `[<id>]` in `body` with a number unique across the run's requests (autocannon's
   * `idReplacement`; a Lua counter per wrk thread, offset by thread). Protocols that match answers
   * to requests by id (JSON-RPC) need it.
   */
  uniqueIds?: boolean
  /** Force a tool instead of auto-detection. */
  tool?: LoadTool
}

/** Summary of one load run. */
export interface LoadResult {
  tool: LoadTool
  /** Completed requests per second over the run. */
  rps: number
  requests: number
  durationSec: number
  latencyP50Ms: number
  latencyP99Ms: number
  /** Responses outside 2xx/3xx; a non-zero value makes `rps` suspect. */
  non2xx: number
  /** Connect/read/write errors and timeouts. */
  errors: number
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

/** The tool `runLoad` would use: `BENCH_TOOL`, else wrk if on PATH, else autocannon. */
export function detectLoadTool(): LoadTool {
  const forced = process.env.BENCH_TOOL
  if (forced === 'wrk' || forced === 'autocannon') return forced
  return onPath('wrk') ? 'wrk' : 'autocannon'
}

/** Default wrk thread count for this machine (leave most cores to the server). */
export function defaultThreads(cores: number): number {
  return Math.max(1, Math.min(4, Math.floor(cores / 4)))
}

/** Generate load against `opts.url` and return its summary; throws if the run failed outright. */
export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url)
  if (!LOOPBACK.has(url.hostname)) throw new Error(`load driver only targets loopback, got ${url.hostname}`)
  if (!Number.isInteger(opts.durationSec))
    throw new Error(`durationSec must be a whole number of seconds, got ${opts.durationSec}`)
  const durationSec = clampInt(opts.durationSec, 1, 60, 'durationSec')
  const connections = clampInt(opts.connections, 1, 1000, 'connections')
  const tool = opts.tool ?? detectLoadTool()
  return tool === 'wrk'
    ? runWrk({ ...opts, durationSec, connections })
    : runAutocannon({ ...opts, durationSec, connections })
}

function clampInt(v: number, min: number, max: number, name: string): number {
  if (!Number.isFinite(v) || v < min || v > max) throw new Error(`${name} must be within ${min}..${max}, got ${v}`)
  return Math.round(v)
}

async function runWrk(opts: LoadOptions): Promise<LoadResult> {
  const threads = Math.min(opts.threads ?? defaultThreads(availableParallelism()), opts.connections)
  const args = [
    '-t',
    String(threads),
    '-c',
    String(opts.connections),
    '-d',
    `${opts.durationSec}s`,
    '--latency',
    '--timeout',
    '5s',
  ]
  let scriptDir: string | undefined
  if (opts.method || opts.body || opts.headers) {
    // wrk sets method/body/headers through a Lua script.
    scriptDir = mkdtempSync(join(tmpdir(), 'bench-wrk-'))
    const lines = [`wrk.method = ${luaString(opts.method ?? 'GET')}`]
    if (opts.body !== undefined) lines.push(`wrk.body = ${luaString(opts.body)}`)
    for (const [k, v] of Object.entries(opts.headers ?? {}))
      lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`)
    if (opts.uniqueIds && opts.body !== undefined) {
      // Each thread has its own Lua state: number its requests from its own billion.
      lines.push(
        'local threads = 0',
        'function setup(thread) threads = threads + 1; thread:set("base", threads * 1000000000) end',
        'local n = 0',
        'function init(args) n = base or 0 end',
        'function request() n = n + 1; return wrk.format(nil, nil, nil, (string.gsub(wrk.body, "%[<id>%]", tostring(n)))) end',
      )
    }
    writeFileSync(join(scriptDir, 'req.lua'), lines.join('\n') + '\n')
    args.push('-s', join(scriptDir, 'req.lua'))
  }
  args.push(opts.url)
  try {
    const [command, pinnedArgs] = pinned('client', 'wrk', args)
    const res = await runCommand(command, pinnedArgs, { timeoutMs: (opts.durationSec + 20) * 1000 })
    if (res.code !== 0) throw new Error(`wrk failed (code ${res.code}): ${res.stderr || res.stdout}`)
    return parseWrk(res.stdout, opts.durationSec)
  } finally {
    if (scriptDir) rmSync(scriptDir, { recursive: true, force: true })
  }
}

function luaString(s: string): string {
  return JSON.stringify(s) // JSON string escapes are valid Lua string escapes for printable input
}

/** Parse wrk's text report (exported for tests of the harness itself). */
export function parseWrk(out: string, durationSec: number): LoadResult {
  const num = (re: RegExp): number | null => {
    const m = re.exec(out)
    return m ? Number(m[1]) : null
  }
  const rps = num(/^Requests\/sec:\s+([\d.]+)/m)
  const requests = num(/^\s*(\d+) requests in/m)
  const elapsed = /requests in ([\d.]+)(ms|s|m)/.exec(out)
  if (rps === null || requests === null) throw new Error(`cannot parse wrk output:\n${out}`)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  const errors = socket ? socket.slice(1, 5).reduce((a, b) => a + Number(b), 0) : 0
  return {
    tool: 'wrk',
    rps,
    requests,
    durationSec: elapsed ? toMs(Number(elapsed[1]), elapsed[2]!) / 1000 : durationSec,
    latencyP50Ms: latency(out, '50%'),
    latencyP99Ms: latency(out, '99%'),
    non2xx: num(/Non-2xx or 3xx responses:\s+(\d+)/) ?? 0,
    errors,
  }
}

function latency(out: string, pct: string): number {
  const m = new RegExp(`^\\s*${pct}\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out)
  return m ? toMs(Number(m[1]), m[2]!) : Number.NaN
}

function toMs(v: number, unit: string): number {
  switch (unit) {
    case 'us':
      return v / 1000
    case 'ms':
      return v
    case 's':
      return v * 1000
    case 'm':
      return v * 60_000
    default:
      return Number.NaN
  }
}

async function runAutocannon(opts: LoadOptions): Promise<LoadResult> {
  const require = createRequire(import.meta.url)
  const cli = require.resolve('autocannon/autocannon.js')
  // Prefer node: autocannon is written for it, and running it on a separate
  // runtime keeps the client's cost independent of the bun under test.
  const runtime = process.env.BENCH_AUTOCANNON_RUNTIME ?? (onPath('node') ? 'node' : process.execPath)
  const args = [cli, '-j', '-n', '-c', String(opts.connections), '-d', String(opts.durationSec), '-t', '5']
  if (opts.method) args.push('-m', opts.method)
  if (opts.body !== undefined) args.push('-b', opts.body)
  if (opts.uniqueIds) args.push('--idReplacement')
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`)
  args.push(opts.url)
  const res = await runCommand(runtime, args, { timeoutMs: (opts.durationSec + 30) * 1000 })
  if (res.code !== 0) throw new Error(`autocannon failed (code ${res.code}): ${res.stderr || res.stdout}`)
  const line = res.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop()
  if (!line) throw new Error(`autocannon printed no JSON:\n${res.stdout}\n${res.stderr}`)
  const j = JSON.parse(line)
  const durationSec = Number(j.duration) || opts.durationSec
  return {
    tool: 'autocannon',
    rps: j.requests.total / durationSec,
    requests: j.requests.total,
    durationSec,
    latencyP50Ms: j.latency.p50,
    latencyP99Ms: j.latency.p99,
    non2xx: j.non2xx ?? 0,
    errors: (j.errors ?? 0) + (j.timeouts ?? 0),
  }
}
