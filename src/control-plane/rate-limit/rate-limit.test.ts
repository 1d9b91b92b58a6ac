/**
 * Per-credential rate limits over real HTTP (the control plane behind the product's listener), on
 * the engine of the pass: 429 `rate_limited` after the burst with `Retry-After` and the RateLimit
 * fields, a request after `Retry-After` succeeds, each credential has its own bucket, public
 * routes are never limited, and two instances on one database share one budget.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  assert,
  BUN,
  startChild,
  suite,
  withPostgresDatabase,
  withTempDir,
  type ChildServer,
} from '../../../tests/harness.ts'
import { serve, type Listener } from '../../serve.ts'
import { BUILT_IN_CLIENTS } from '../oauth/oauth-clients.ts'
import { issueGrant } from '../oauth/oauth-tokens.ts'
import { TEST_ENGINE } from '../testing/test-database.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import type { RateLimitFileSchema } from './rate-limit-settings.ts'
import type * as v from 'valibot'

const test = suite('control-plane/rate-limit', { timeoutMs: 90_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../bin/service-server.ts')
const KEY = randomBytes(32).toString('base64')

type Served = { plane: TestControlPlane; listener: Listener; url: string }

async function served(rateLimit: v.InferOutput<typeof RateLimitFileSchema>): Promise<Served> {
  const plane = await startTestControlPlane({ file: { rateLimit } })
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: plane.app.fetch, direct: plane.app.direct })
  return { plane, listener, url: `http://127.0.0.1:${listener.port}` }
}

async function stop(...all: Served[]): Promise<void> {
  for (const s of all.reverse()) {
    await s.listener.stop()
    await s.plane.close()
  }
}

async function signUp(url: string, email: string): Promise<string> {
  const res = await fetch(`${url}/v1/auth/sign-up`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: `pw ${email} secret`, name: 'Limited' }),
  })
  assert.is(res.status, 201)
  return ((await res.json()) as { session: { token: string } }).session.token
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** GETs `/v1/me` until the first refusal; the statuses and the refusal. */
async function untilRefused(url: string, headers: Record<string, string>, max = 50) {
  const seen: Response[] = []
  for (let i = 0; i < max; i++) {
    const res = await fetch(`${url}/v1/me`, { headers })
    if (res.status === 429) return { ok: seen.filter((r) => r.status === 200), refused: res, body: await res.json() }
    await res.arrayBuffer()
    seen.push(res)
  }
  throw new Error(`no 429 within ${max} requests`)
}

test('past the burst a credential is refused with 429 rate_limited, Retry-After and the RateLimit fields; after Retry-After it is served again', async () => {
  const s = await served({ ratePerSecond: 0.5, burst: 3 })
  try {
    const token = await signUp(s.url, 'burst@limit.test')
    const started = performance.now()
    const first = await fetch(`${s.url}/v1/me`, { headers: bearer(token) })
    assert.is(first.status, 200)
    await first.arrayBuffer()
    assert.is(first.headers.get('ratelimit-policy'), '"credential";q=3;w=6')
    assert.match(first.headers.get('ratelimit') ?? '', /^"credential";r=2;t=\d+$/)
    const { ok, refused, body } = await untilRefused(s.url, bearer(token))
    const refusedAt = performance.now()
    const elapsed = (performance.now() - started) / 1000
    // The burst of 3, plus what refilled at 0.5/s while the requests ran on a busy machine.
    assert.ok(ok.length + 1 >= 3 && ok.length + 1 <= 3 + Math.ceil(elapsed * 0.5), `${ok.length + 1} served`)
    assert.is(refused.status, 429)
    assert.is(body.code, 'rate_limited')
    const retryAfter = Number(refused.headers.get('retry-after'))
    assert.ok(retryAfter >= 1 && retryAfter <= 2, `retry-after ${retryAfter}`)
    assert.is(body.details.retryAfterSeconds, retryAfter)
    assert.is(refused.headers.get('ratelimit-policy'), '"credential";q=3;w=6')
    assert.match(refused.headers.get('ratelimit') ?? '', /^"credential";r=0;t=[1-6]$/)
    assert.ok(refused.headers.get('x-request-id'), 'the refusal carries the request id like every error')
    const wait = retryAfter * 1000 + 50 - (performance.now() - refusedAt)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)))
    const after = await fetch(`${s.url}/v1/me`, { headers: bearer(token) })
    assert.is(after.status, 200, 'a request after Retry-After is served')
    assert.is(((await after.json()) as { user: { email: string } }).user.email, 'burst@limit.test')
  } finally {
    await stop(s)
  }
})

test('each credential has its own bucket: another session and an API key of the same person are still served', async () => {
  const s = await served({ ratePerSecond: 0.01, burst: 4 })
  try {
    const token = await signUp(s.url, 'owner@buckets.test')
    const org = await fetch(`${s.url}/v1/orgs`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Buckets' }),
    })
    assert.is(org.status, 201)
    const created = await fetch(`${s.url}/v1/api-keys`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'limited key' }),
    })
    assert.is(created.status, 201)
    const { key } = (await created.json()) as { key: string }
    const { ok, refused } = await untilRefused(s.url, bearer(token))
    assert.is(ok.length, 2, 'org and key creation took two of the four')
    assert.is(refused.status, 429)
    const signIn = await fetch(`${s.url}/v1/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@buckets.test', password: 'pw owner@buckets.test secret' }),
    })
    assert.is(signIn.status, 200, 'sign-in is public: the limit of a session does not stop it')
    const second = ((await signIn.json()) as { session: { token: string } }).session.token
    const bySecond = await fetch(`${s.url}/v1/me`, { headers: bearer(second) })
    assert.is(bySecond.status, 200)
    assert.match(bySecond.headers.get('ratelimit') ?? '', /r=3;/)
    await bySecond.arrayBuffer()
    const byKey = await fetch(`${s.url}/v1/me`, { headers: { 'x-api-key': key } })
    assert.is(byKey.status, 200)
    assert.match(byKey.headers.get('ratelimit') ?? '', /r=3;/)
    await byKey.arrayBuffer()
    const refusedAgain = await fetch(`${s.url}/v1/me`, { headers: bearer(token) })
    assert.is(refusedAgain.status, 429, 'the first session is still refused')
    await refusedAgain.arrayBuffer()
  } finally {
    await stop(s)
  }
})

test('an OAuth token (as the device flow issues it, delivery:read) has its own bucket, keyed by its grant', async () => {
  const s = await served({ ratePerSecond: 0.01, burst: 3 })
  try {
    const token = await signUp(s.url, 'owner@oauth-limit.test')
    const org = await fetch(`${s.url}/v1/orgs`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'OAuth limits' }),
    })
    assert.is(org.status, 201)
    const me = (await (await fetch(`${s.url}/v1/me`, { headers: bearer(token) })).json()) as any
    // Issued as an approved device request issues it (the device flow itself has its own suite).
    const deps = s.plane.app.deps
    const { response } = await deps.db.transaction().execute((trx) =>
      issueGrant(
        deps,
        trx,
        {
          orgId: me.organization.id,
          orgName: me.organization.name,
          memberId: me.member.id,
          userId: me.user.id,
          role: 'owner',
        },
        BUILT_IN_CLIENTS.get('opencode')!,
        ['delivery:read'],
        null,
      ),
    )
    const { ok, refused } = await untilRefused(s.url, bearer(response.access_token))
    assert.is(ok.length, 3, 'the token has a bucket of its own (the session used two of its three)')
    assert.is(refused.headers.get('ratelimit-policy'), '"credential";q=3;w=300')
  } finally {
    await stop(s)
  }
})

test('/health, /ready, /openapi.json and the console are never limited and carry no RateLimit fields', async () => {
  const s = await served({ ratePerSecond: 0.01, burst: 1 })
  try {
    const token = await signUp(s.url, 'public@limit.test')
    for (const path of ['/health', '/ready', '/openapi.json', '/console']) {
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${s.url}${path}`, { headers: bearer(token) })
        await res.arrayBuffer()
        assert.is(res.status, 200, `${path} #${i}`)
        assert.is(res.headers.get('ratelimit'), null, path)
      }
    }
    const me = await fetch(`${s.url}/v1/me`, { headers: bearer(token) })
    assert.is(me.status, 200, 'the credential still has its one request')
    await me.arrayBuffer()
  } finally {
    await stop(s)
  }
})

test('with rateLimit.enabled false nothing is limited and no RateLimit field is sent', async () => {
  const s = await served({ enabled: false, ratePerSecond: 0.01, burst: 1 })
  try {
    const token = await signUp(s.url, 'off@limit.test')
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${s.url}/v1/me`, { headers: bearer(token) })
      await res.arrayBuffer()
      assert.is(res.status, 200)
      assert.is(res.headers.get('ratelimit'), null)
    }
    assert.is(s.plane.app.rateLimit, null)
  } finally {
    await stop(s)
  }
})

/** Two control-plane processes on one database (PostgreSQL in its pass, else one SQLite file). */
async function twoInstances(dir: string, burst: number, fn: (a: string, b: string) => Promise<void>): Promise<void> {
  const config = join(dir, 'cp.json')
  writeFileSync(config, JSON.stringify({ rateLimit: { ratePerSecond: 0.01, burst, instanceRefreshMs: 200 } }))
  const run = async (database: string[], env: Record<string, string>) => {
    const children: ChildServer[] = []
    const start = (n: number) =>
      startChild(
        BUN,
        [
          ENTRY,
          '--mode',
          'control-plane',
          '--config',
          config,
          '--data-dir',
          join(dir, `data-${n}`),
          '--port',
          '0',
          ...database,
        ],
        {
          cwd: dir,
          env: { HOME: dir, SERVICE_ENCRYPTION_KEY: KEY, SERVICE_OPEN_SIGN_UP: 'true', SERVICE_METRICS: '1', ...env },
          timeoutMs: 30_000,
        },
      )
    try {
      // One first, so it migrates; the other finds the schema current.
      children.push(await start(0))
      children.push(await start(1))
      // Each counts the live instances every 200 ms; the gauge says when both divide by two.
      for (const child of children) {
        const deadline = Date.now() + 10_000
        while (!/^service_rate_limit_instances 2$/m.test(await (await fetch(`${child.url}/metrics`)).text())) {
          if (Date.now() > deadline) throw new Error('the instances never counted each other')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
      await fn(children[0]!.url, children[1]!.url)
    } finally {
      await Promise.all(children.map((child) => child.stop()))
    }
  }
  if (TEST_ENGINE === 'postgres') await withPostgresDatabase((url) => run([], { SERVICE_DATABASE_URL: url }), 'svc_rl')
  else await run(['--database', join(dir, 'shared.sqlite')], {})
}

test('two instances on one database share one budget: spread over both, a credential gets the burst in total (±1), pinned to one it gets half', async () => {
  const burst = 10
  await withTempDir(async (dir) => {
    await twoInstances(dir, burst, async (a, b) => {
      const spread = await signUp(a, 'spread@shared.test')
      let served = 0
      for (let i = 0; i < 30; i++) {
        const res = await fetch(`${i % 2 === 0 ? a : b}/v1/me`, { headers: bearer(spread) })
        await res.arrayBuffer()
        if (res.status === 200) served++
        else assert.is(res.status, 429)
      }
      // Refill at 0.01/s adds nothing measurable; the tolerance covers one token of rounding.
      assert.ok(Math.abs(served - burst) <= 1, `spread over two instances: ${served} served of a budget of ${burst}`)
      const pinned = await signUp(a, 'pinned@shared.test')
      const { ok } = await untilRefused(a, bearer(pinned))
      assert.is(ok.length, burst / 2, 'one instance holds half the budget')
      const other = await fetch(`${b}/v1/me`, { headers: bearer(pinned) })
      assert.is(other.status, 200, 'the other instance still holds its half')
      assert.is(
        other.headers.get('ratelimit-policy'),
        `"credential";q=${burst};w=1000`,
        'the policy names the whole budget',
      )
      await other.arrayBuffer()
      const refusals = await (await fetch(`${a}/metrics`)).text()
      assert.match(refusals, /^service_rate_limited_requests_total\{credential="session"\} [1-9]/m)
    })
  })
})

test.run()
