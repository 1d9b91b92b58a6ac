/**
 * Does a plain member's change feed cost what an owner's does, however long the feed? Three
 * organizations in one server hold 1,000, 10,000 and 100,000 events, of which the member sees
 * 1 % (every hundredth, spread evenly). Each organization's rows are the product's own: through
 * the API the owner creates a skill granted to the member and one that is not, and appends a
 * version to each; those two `config_object.version_added` events, with their stored audience,
 * are then copied straight into the tables (`change_event`, `change_audience`) under new numbers,
 * 99 of the hidden one for each of the visible one. On PostgreSQL the sequence is moved past them.
 *
 * Measured per size, one request at a time, sizes and callers alternating request by request:
 * - page: `GET /v1/events?after=0&limit=10` (10 so the page is full at every size: 10 visible
 *   events at 1,000);
 * - SSE catch-up: a stream opened with `Last-Event-ID` just before the caller's last 10 visible
 *   events, timed until the 10th frame.
 * Figures: member p50 at 100,000 ÷ at 1,000 (target ≤ 1.3) and member ÷ owner at each size
 * (target ≤ 2), on SQLite, then on PostgreSQL (`BENCH_DATABASE_URL`, else
 * `SERVICE_TEST_DATABASE_URL`, else the loopback server; a throw-away database; skipped with the
 * reason when none answers). Issue 29, item 3.
 * @module
 */
import { join } from 'node:path'
import pg from 'pg'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { createBenchDatabase, startPostgresInstance } from '../lib/pg-bench.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const SIZES = [1_000, 10_000, 100_000] as const
/** One event in this many is visible to the member. */
const SHARE = 100
const PAGE = 10
const REQUESTS_PER_SAMPLE = 15
const BATCH = 1_000

interface EventRow {
  org_id: string
  seq: number
  kind: string
  subject_type: string | null
  subject_id: string | null
  data: string | null
  created_at: string
}

interface AudienceRow {
  principal: string
  hint: number
}

/** The tables the seed writes, on either engine. */
interface SeedTarget {
  query<T>(text: string, params: unknown[]): Promise<T[]>
  /** Runs `work` in one transaction. */
  transaction(work: () => Promise<void>): Promise<void>
  /** After the rows are in: move the PostgreSQL sequence, refresh statistics. */
  finish(): Promise<void>
  close(): Promise<void>
}

async function sqliteTarget(path: string): Promise<SeedTarget> {
  // Imported by name so the type checker, which has no Bun types, leaves it alone.
  const { Database } = await import('bun:sqlite' as string)
  const db = new Database(path)
  db.exec('pragma busy_timeout = 10000')
  return {
    query: async <T>(text: string, params: unknown[]) =>
      db.query(text.replace(/\$\d+/g, '?')).all(...(params as never[])) as T[],
    transaction: async (work) => {
      db.exec('begin immediate')
      try {
        await work()
        db.exec('commit')
      } catch (error) {
        db.exec('rollback')
        throw error
      }
    },
    finish: async () => {},
    close: async () => db.close(),
  }
}

async function postgresTarget(url: string): Promise<SeedTarget> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return {
    query: async <T>(text: string, params: unknown[]) => (await client.query(text, params)).rows as T[],
    transaction: async (work) => {
      await client.query('begin')
      try {
        await work()
        await client.query('commit')
      } catch (error) {
        await client.query('rollback')
        throw error
      }
    },
    finish: async () => {
      await client.query(`select setval('change_event_seq', (select max(seq) from change_event))`)
      await client.query('analyze')
    },
    close: () => client.end(),
  }
}

type Call = (method: string, path: string, token: string, json?: unknown, org?: string) => Promise<any>

function httpCall(baseUrl: string): Call {
  return async (method, path, token, json, org) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` }
    if (org) headers['x-service-org-id'] = org
    if (json !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: json === undefined ? undefined : JSON.stringify(json),
    })
    const text = await res.text()
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`)
    return text ? JSON.parse(text) : undefined
  }
}

/** One organization ready to measure. */
interface FeedOrg {
  size: number
  orgId: string
  member: string
  /** Resume points: just before the caller's last `PAGE` visible events. */
  memberResume: number
  ownerResume: number
}

const SKILL = (name: string, n: number) => `---\nname: ${name}\ndescription: Bench ${name}\n---\nDo ${name} ${n}.\n`

/** Builds one organization through the API, then copies its two template events `size` times. */
async function buildFeedOrg(
  call: Call,
  signUp: (email: string, invitationToken?: string) => Promise<string>,
  owner: string,
  size: number,
  seed: SeedTarget,
): Promise<FeedOrg> {
  const org = (await call('POST', '/v1/orgs', owner, { name: `Feed ${size}` })).item.id as string
  const invite = await call(
    'POST',
    '/v1/invitations',
    owner,
    { email: `member-${size}@bench.test`, role: 'member' },
    org,
  )
  const member = await signUp(`member-${size}@bench.test`, invite.token)
  const memberId = (await call('GET', '/v1/me', member)).member.id as string
  const ids: Record<'seen' | 'unseen', string> = { seen: '', unseen: '' }
  for (const which of ['seen', 'unseen'] as const) {
    const made = await call('POST', '/v1/skills', owner, { skillMd: SKILL(which, 0) }, org)
    ids[which] = made.item.id
    if (which === 'seen')
      await call('POST', `/v1/config-objects/${ids.seen}/access`, owner, { memberId, role: 'viewer' }, org)
    await call(
      'POST',
      `/v1/config-objects/${ids[which]}/versions`,
      owner,
      { input: { rawSourceText: SKILL(which, 1) } },
      org,
    )
  }
  const template = async (subject: string) => {
    const [event] = await seed.query<EventRow>(
      "select * from change_event where org_id = $1 and subject_id = $2 and kind = 'config_object.version_added' order by seq desc limit 1",
      [org, subject],
    )
    const audience = await seed.query<AudienceRow>(
      'select principal, hint from change_audience where org_id = $1 and seq = $2',
      [org, event!.seq],
    )
    return { event: event!, audience }
  }
  const seen = await template(ids.seen)
  const unseen = await template(ids.unseen)
  if (!seen.audience.some((a) => a.principal === `member:${memberId}`))
    throw new Error('the visible template does not reach the member')
  const [{ head }] = (await seed.query<{ head: number | string }>(
    'select max(seq) as head from change_event where org_id = $1',
    [org],
  )) as [{ head: number | string }]
  const first = Number(head) + 1
  const visible: number[] = []
  await seed.transaction(async () => {
    for (let start = 0; start < size; start += BATCH) {
      const events: unknown[] = []
      const audience: unknown[] = []
      let eventRows = 0
      let audienceRows = 0
      for (let i = start; i < Math.min(size, start + BATCH); i++) {
        const seq = first + i
        const from = i % SHARE === SHARE / 2 ? seen : unseen
        if (from === seen) visible.push(seq)
        const e = from.event
        events.push(e.org_id, seq, e.kind, e.subject_type, e.subject_id, e.data, e.created_at)
        eventRows++
        for (const a of from.audience) {
          audience.push(org, seq, a.principal, Number(a.hint))
          audienceRows++
        }
      }
      const slots = (rows: number, width: number) =>
        Array.from(
          { length: rows },
          (_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`,
        ).join(', ')
      await seed.query(
        `insert into change_event (org_id, seq, kind, subject_type, subject_id, data, created_at) values ${slots(eventRows, 7)}`,
        events,
      )
      await seed.query(
        `insert into change_audience (org_id, seq, principal, hint) values ${slots(audienceRows, 4)}`,
        audience,
      )
    }
  })
  const last = first + size - 1
  return {
    size,
    orgId: org,
    member,
    memberResume: visible[visible.length - PAGE]! - 1,
    ownerResume: last - PAGE,
  }
}

/** Times one page request (ms), checking it answered 200 with a full page. */
async function timedPage(baseUrl: string, headers: Record<string, string>): Promise<number> {
  const start = performance.now()
  const res = await fetch(`${baseUrl}/v1/events?after=0&limit=${PAGE}`, { headers })
  const body: any = await res.json()
  const took = performance.now() - start
  if (res.status !== 200 || body.items.length !== PAGE) throw new Error(`page answered ${res.status}`)
  return took
}

/** Times an SSE catch-up (ms): from the request to the `PAGE`th event frame. */
async function timedCatchUp(baseUrl: string, headers: Record<string, string>, resume: number): Promise<number> {
  const abort = new AbortController()
  const start = performance.now()
  const res = await fetch(`${baseUrl}/v1/events`, {
    headers: { ...headers, accept: 'text/event-stream', 'last-event-id': String(resume) },
    signal: abort.signal,
  })
  if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`)
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let frames = 0
  try {
    while (frames < PAGE) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`stream ended after ${frames} frames`)
      text += decoder.decode(value, { stream: true })
      frames = text.split('\nid: ').length - 1 + (text.startsWith('id: ') ? 1 : 0)
    }
    return performance.now() - start
  } finally {
    abort.abort()
  }
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const dir = ctx.tempDir('control-plane-feed')
  await measure(
    ctx,
    'SQLite',
    () => startServer(ctx.productCommand('source', dir, undefined, 'control-plane')),
    () => sqliteTarget(join(dir, 'control-plane.sqlite')),
  )
  const database = await createBenchDatabase(ctx, 'feed')
  if (!database) return
  try {
    await measure(
      ctx,
      'PostgreSQL',
      () => startPostgresInstance(ctx, database.url, 'feed'),
      () => postgresTarget(database.url),
    )
  } finally {
    await database.drop()
  }
}

type Sample = Map<string, number[]>

async function measure(
  ctx: BenchContext,
  engine: string,
  start: () => Promise<RunningServer>,
  open: () => Promise<SeedTarget>,
): Promise<void> {
  let server: RunningServer | undefined
  try {
    server = await start()
    const base = server.baseUrl
    const call = httpCall(base)
    const signUp = async (email: string, invitationToken?: string) => {
      const res = await fetch(`${base}/v1/auth/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'bench password', name: email.split('@')[0], invitationToken }),
      })
      const body: any = await res.json()
      if (res.status !== 201) throw new Error(`sign-up ${email} answered ${res.status}: ${JSON.stringify(body)}`)
      return body.session.token as string
    }
    const owner = await signUp('owner@bench.test')
    const seed = await open()
    const orgs: FeedOrg[] = []
    try {
      for (const size of SIZES) {
        ctx.log(`${engine}: organization of ${size} events`)
        orgs.push(await buildFeedOrg(call, signUp, owner, size, seed))
      }
      await seed.finish()
    } finally {
      await seed.close()
    }
    const who = (org: FeedOrg, as: 'member' | 'owner'): Record<string, string> =>
      as === 'member'
        ? { authorization: `Bearer ${org.member}` }
        : { authorization: `Bearer ${owner}`, 'x-service-org-id': org.orgId }
    const kinds = {
      page: (org: FeedOrg, as: 'member' | 'owner') => timedPage(base, who(org, as)),
      'SSE catch-up': (org: FeedOrg, as: 'member' | 'owner') =>
        timedCatchUp(base, who(org, as), as === 'member' ? org.memberResume : org.ownerResume),
    }
    const growth = new Map<string, Array<{ baseline: number; ours: number }>>()
    const versusOwner = new Map<string, Array<{ baseline: number; ours: number }>>()
    const rounds = ctx.settings.rounds
    for (let r = 0; r < rounds; r++) {
      for (const [kind, time] of Object.entries(kinds)) {
        const samples: Sample = new Map()
        for (let i = 0; i < REQUESTS_PER_SAMPLE; i++) {
          const order = (r + i) % 2 === 0 ? orgs : [...orgs].reverse()
          for (const org of order)
            for (const as of ['member', 'owner'] as const) {
              const key = `${as}@${org.size}`
              samples.set(key, [...(samples.get(key) ?? []), await time(org, as)])
            }
        }
        const p50 = (as: string, size: number) => median(samples.get(`${as}@${size}`)!)
        const grew = { baseline: p50('member', SIZES[0]), ours: p50('member', SIZES[2]) }
        growth.set(kind, [...(growth.get(kind) ?? []), grew])
        printRound(`${engine}: member ${kind} ${SIZES[2]} ÷ ${SIZES[0]}`, r, rounds, grew.ours, grew.baseline, 'ms p50')
        for (const size of SIZES) {
          const pair = { baseline: p50('owner', size), ours: p50('member', size) }
          const label = `${kind}@${size}`
          versusOwner.set(label, [...(versusOwner.get(label) ?? []), pair])
          printRound(`${engine}: ${kind} member ÷ owner at ${size}`, r, rounds, pair.ours, pair.baseline, 'ms p50')
        }
      }
    }
    const subject = `bun bin/service-server.ts --mode control-plane on ${engine}`
    for (const kind of Object.keys(kinds)) {
      const pairs = growth.get(kind)!
      ctx.record(
        makeFigure({
          caseName: 'control-plane-feed',
          name: `${engine}: member ${kind} p50 at ${SIZES[2]} ÷ at ${SIZES[0]} events`,
          unit: 'ms',
          subject: `${subject}, ${SIZES[2]} events, the member sees 1 %`,
          baselineLabel: `same request at ${SIZES[0]} events`,
          rounds: pairs,
          target: { op: '<=', value: 1.3 },
          notes: [
            `${REQUESTS_PER_SAMPLE} sequential requests per sample; p50 ${round(median(pairs.map((p) => p.baseline)), 2)} ms → ${round(median(pairs.map((p) => p.ours)), 2)} ms`,
          ],
        }),
      )
      for (const size of SIZES) {
        const pairs = versusOwner.get(`${kind}@${size}`)!
        ctx.record(
          makeFigure({
            caseName: 'control-plane-feed',
            name: `${engine}: ${kind} member ÷ owner at ${size} events`,
            unit: 'ms',
            subject: `${subject}, the member (sees 1 %)`,
            baselineLabel: 'the owner, same organization',
            rounds: pairs,
            target: { op: '<=', value: 2 },
            notes: [
              `p50 owner ${round(median(pairs.map((p) => p.baseline)), 2)} ms, member ${round(median(pairs.map((p) => p.ours)), 2)} ms`,
            ],
          }),
        )
      }
    }
  } finally {
    await server?.stop()
  }
}

export default defineCase({
  name: 'control-plane-feed',
  description:
    "a plain member's change-feed page and SSE catch-up at 100,000 events ÷ at 1,000 (target ≤ 1.3) and ÷ the owner's (≤ 2), the member seeing 1 %, on SQLite and PostgreSQL",
  run,
})
