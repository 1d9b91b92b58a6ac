/**
 * What the per-credential rate limit costs a request: `GET /v1/me` (one session) on the control
 * plane from source with the limiter on, against the same server with it off
 * (`SERVICE_RATE_LIMIT=0`), alternated in the same rounds. The "on" side has a budget the load
 * never reaches (every request takes a token, computes the RateLimit fields and sends them; none
 * is refused), so the figure is the limiter's cost alone. Target: on ÷ off ≥ 0.95.
 */
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'
import type { ControlPlanePrincipal } from '../../src/control-plane/auth.ts'
import type { ControlPlaneRule } from '../../src/control-plane/policy.ts'
import { CredentialRateLimiter } from '../../src/control-plane/rate-limit/credential-rate-limiter.ts'
import { rateLimitedAuth } from '../../src/control-plane/rate-limit/rate-limited-auth.ts'

const TARGET = { op: '>=' as const, value: 0.95 }

async function sessionOf(server: RunningServer): Promise<string> {
  const res = await fetch(`${server.baseUrl}/v1/auth/sign-up`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'owner@bench.test', password: 'bench password', name: 'Owner' }),
  })
  const text = await res.text()
  if (res.status !== 201) throw new Error(`sign-up answered ${res.status}: ${text.slice(0, 200)}`)
  return JSON.parse(text).session.token
}

/**
 * The limiter's own work per request in this process (a token taken, the RateLimit fields set on a
 * response), in µs: a figure the machine's load cannot blur as much as two servers under wrk.
 */
function inProcessMicros(): number {
  const limiter = new CredentialRateLimiter({ ratePerSecond: 1e9, burst: 1e9, maxTracked: 100_000 })
  const principal = () =>
    ({ credential: 'session', session: { id: 'ses_bench', expiresAt: '', activeOrgId: null } }) as ControlPlanePrincipal
  const inner = { authenticate: principal, security: () => [], statuses: () => [] }
  const { auth } = rateLimitedAuth(inner as never, limiter, { ratePerSecond: 1e9, burst: 1e9 })
  const rule = { kind: 'identity' } as ControlPlaneRule
  const request = new Request('http://bench/v1/me')
  const measure = (n: number, limited: boolean) => {
    const started = performance.now()
    for (let i = 0; i < n; i++) {
      const response = new Response('{}', { headers: { 'content-type': 'application/json' } })
      if (limited) auth.finish!(auth.authenticate(request, rule) as ControlPlanePrincipal, response)
      else inner.authenticate()
    }
    return (performance.now() - started) * 1000
  }
  measure(20_000, true)
  measure(20_000, false)
  const n = 200_000
  return Math.max(0, (measure(n, true) - measure(n, false)) / n)
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const servers: RunningServer[] = []
  try {
    const start = async (name: string, env: Record<string, string>) => {
      const cmd = ctx.productCommand('source', ctx.tempDir(`rate-limit-${name}`), undefined, 'control-plane')
      const server = await startServer({ ...cmd, label: `ours(${name})`, env: { ...cmd.env, ...env } })
      servers.push(server)
      return server
    }
    const off = await start('limit-off', { SERVICE_RATE_LIMIT: '0' })
    const on = await start('limit-on', {})
    const offAuth = { authorization: `Bearer ${await sessionOf(off)}` }
    const onAuth = { authorization: `Bearer ${await sessionOf(on)}` }
    const onMe = await fetch(`${on.baseUrl}/v1/me`, { headers: onAuth })
    await onMe.arrayBuffer()
    if (!onMe.headers.get('ratelimit')) throw new Error('the limiter should be on: no RateLimit field on /v1/me')
    const offMe = await fetch(`${off.baseUrl}/v1/me`, { headers: offAuth })
    await offMe.arrayBuffer()
    if (offMe.headers.get('ratelimit')) throw new Error('SERVICE_RATE_LIMIT=0 should turn the limiter off')
    const targets: LoadTarget[] = [
      { key: 'off', url: `${off.baseUrl}/v1/me`, headers: offAuth },
      { key: 'on', url: `${on.baseUrl}/v1/me`, headers: onAuth },
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => printRound('GET /v1/me, limiter on ÷ off', r, s.rounds, res.on!.rps, res.off!.rps, 'req/s'),
    })
    const micros = inProcessMicros()
    const mine = results.on!
    const bad = [...mine, ...results.off!].reduce((a, x) => a + x.non2xx + x.errors, 0)
    const total = [...mine, ...results.off!].reduce((a, x) => a + x.requests, 0)
    ctx.record(
      makeFigure({
        caseName: 'rate-limit-cost',
        name: 'GET /v1/me req/s, rate limiter on ÷ off',
        unit: 'req/s',
        subject: 'bun bin/service-server.ts --mode control-plane, per-credential limiter on (budget never reached)',
        baselineLabel: 'the same server with SERVICE_RATE_LIMIT=0',
        rounds: mine.map((x, i) => ({ baseline: results.off![i]!.rps, ours: x.rps })),
        target: TARGET,
        invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
        notes: [
          `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p50 on ${round(median(mine.map((x) => x.latencyP50Ms)), 2)} ms, off ${round(median(results.off!.map((x) => x.latencyP50Ms)), 2)} ms`,
          `in process the limiter adds ${round(micros, 3)} µs per request (a token taken and the RateLimit fields set), ${round((micros / (1e6 / median(results.off!.map((x) => x.rps)))) * 100, 2)} % of a request at the "off" median rate`,
        ],
      }),
    )
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'rate-limit-cost',
  description: 'GET /v1/me with the per-credential rate limiter on ÷ off, same source, same rounds; target ≥ 0.95',
  run,
})
