/**
 * Is a plain member's list cost flat in what the organization holds? Two organizations are built
 * through the API in one server: one with 200 skills and one with 6,000, shaped alike (90 % of the
 * skills spread over 200 skill hubs, the rest outside any hub). In each:
 * - a "wide" member is in 50 teams, receives 150 of the hubs (100 through teams, 50 directly) and
 *   a team grant on half of the skills outside hubs, so they see most of the catalog;
 * - a "narrow" member receives one hub of 120 skills spread evenly through the catalog, so they
 *   see the same 120 skills in both organizations: a small share of the large one;
 * - a "hubs" member receives all 200 hubs through one team and nothing outside them, so they see
 *   the first 90 % of the catalog and none of its tail: their last full page ends where what they
 *   see stops (issue 29, item 3: deep pages grew with the catalog there).
 * For each member, `GET /v1/me/skills?limit=50` and `GET /v1/config-objects?type=skill&limit=50`,
 * first page and a deep page (the last full page, reached with real cursors), are timed one
 * request at a time, the two organizations alternating request by request; the figure is the
 * median of the per-round p50 ratios 6,000 ÷ 200. Target ≤ 1.3
 * (issue 15, item 4). The owner's first page is printed as a reference (admins skip the filter).
 * Runs on SQLite, then again on PostgreSQL (`BENCH_DATABASE_URL`, else `SERVICE_TEST_DATABASE_URL`,
 * else the loopback server; a throw-away database; skipped with the reason when none answers).
 * @module
 */
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { createBenchDatabase, startPostgresInstance } from '../lib/pg-bench.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const SIZES = [200, 6000] as const
const HUBS = 200
const TEAMS = 50
const NARROW_SKILLS = 120
const REQUESTS_PER_SAMPLE = 30
const SEED_CONCURRENCY = 8

interface CallOptions {
  token: string
  org?: string
  json?: unknown
}

type Call = (method: string, path: string, options: CallOptions) => Promise<any>

function httpCall(baseUrl: string): Call {
  return async (method, path, options) => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}` }
    if (options.org) headers['x-service-org-id'] = options.org
    if (options.json !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
    })
    const text = await res.text()
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`)
    return text ? JSON.parse(text) : undefined
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function inPool<T, R>(items: T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await work(items[i]!, i)
      }
    }),
  )
  return out
}

/** A built organization: the owner's org header and the two members' session tokens. */
export interface VisibilityOrg {
  size: number
  orgId: string
  ownerToken: string
  wide: string
  narrow: string
  hubs: string
}

/** Builds one organization of `size` skills through the API (see the module comment for its shape). */
export async function buildVisibilityOrg(
  call: Call,
  signUp: (email: string, invitationToken?: string) => Promise<string>,
  ownerToken: string,
  size: number,
  log: (message: string) => void,
): Promise<VisibilityOrg> {
  const org = (await call('POST', '/v1/orgs', { token: ownerToken, json: { name: `Visibility ${size}` } })).item.id
  const owner = { token: ownerToken, org }
  const person = async (who: string) => {
    const invite = await call('POST', '/v1/invitations', {
      ...owner,
      json: { email: `${who}-${size}@bench.test`, role: 'member' },
    })
    const token = await signUp(`${who}-${size}@bench.test`, invite.token)
    const me = await call('GET', '/v1/me', { token })
    return { token, memberId: me.member.id as string }
  }
  const wide = await person('wide')
  const narrow = await person('narrow')
  const hubsMember = await person('hubs')
  const teams = await inPool(
    Array.from({ length: TEAMS }, (_, i) => i),
    SEED_CONCURRENCY,
    async (i) =>
      (await call('POST', '/v1/teams', { ...owner, json: { name: `team-${i}`, memberIds: [wide.memberId] } })).item
        .id as string,
  )
  const hubs = await inPool(
    Array.from({ length: HUBS + 1 }, (_, i) => i),
    SEED_CONCURRENCY,
    async (i) =>
      (await call('POST', '/v1/skill-hubs', { ...owner, json: { name: i === HUBS ? 'narrow' : `hub-${i}` } })).item
        .id as string,
  )
  log(`org ${size}: creating ${size} skills`)
  // Sequential ids keep creation order equal to id order, so "spread through the catalog" holds.
  const skills: string[] = []
  for (let start = 0; start < size; start += SEED_CONCURRENCY) {
    const batch = Array.from({ length: Math.min(SEED_CONCURRENCY, size - start) }, (_, k) => start + k)
    const made = await Promise.all(
      batch.map(
        async (i) =>
          (
            await call('POST', '/v1/skills', {
              ...owner,
              json: { skillMd: `---\nname: skill-${i}\ndescription: Bench skill ${i}\n---\nDo thing ${i}.\n` },
            })
          ).item.id as string,
      ),
    )
    skills.push(...made)
  }
  skills.sort()
  const inHubs = Math.floor(size * 0.9)
  log(`org ${size}: filling hubs, assigning, granting`)
  const additions: Array<[string, string]> = []
  for (let i = 0; i < inHubs; i++) additions.push([hubs[i % HUBS]!, skills[i]!])
  for (let k = 0; k < NARROW_SKILLS; k++) additions.push([hubs[HUBS]!, skills[Math.floor((k * size) / NARROW_SKILLS)]!])
  await inPool(additions, SEED_CONCURRENCY, ([hub, skillId]) =>
    call('POST', `/v1/skill-hubs/${hub}/skills`, { ...owner, json: { skillId } }),
  )
  const assignments: Array<[string, Record<string, unknown>]> = []
  for (let h = 0; h < 100; h++) assignments.push([hubs[h]!, { teamId: teams[h % TEAMS] }])
  for (let h = 100; h < 150; h++) assignments.push([hubs[h]!, { memberId: wide.memberId }])
  assignments.push([hubs[HUBS]!, { memberId: narrow.memberId }])
  const hubsTeam = (
    await call('POST', '/v1/teams', { ...owner, json: { name: 'all-hubs', memberIds: [hubsMember.memberId] } })
  ).item.id as string
  for (let h = 0; h < HUBS; h++) assignments.push([hubs[h]!, { teamId: hubsTeam }])
  await inPool(assignments, SEED_CONCURRENCY, ([hub, json]) =>
    call('POST', `/v1/skill-hubs/${hub}/assignments`, { ...owner, json }),
  )
  const grants = skills.slice(inHubs).filter((_, i) => i % 2 === 0)
  await inPool(grants, SEED_CONCURRENCY, (id, i) =>
    call('POST', `/v1/config-objects/${id}/access`, { ...owner, json: { teamId: teams[i % TEAMS], role: 'viewer' } }),
  )
  return { size, orgId: org, ownerToken, wide: wide.token, narrow: narrow.token, hubs: hubsMember.token }
}

/** The cursor of the last full page of a list (walked with real cursors), or null when it has one page. */
async function deepCursor(call: Call, path: string, token: string): Promise<{ cursor: string | null; pages: number }> {
  let cursor: string | null = null
  let lastFull: string | null = null
  let pages = 0
  for (;;) {
    const page = await call('GET', `${path}${cursor ? `&cursor=${cursor}` : ''}`, { token })
    pages++
    if (page.items.length === 50) lastFull = cursor
    if (!page.nextCursor) break
    cursor = page.nextCursor
  }
  return { cursor: lastFull, pages }
}

interface Target {
  label: string
  /** Per size: the token and the full path. */
  bySize: Map<number, { token: string; path: string }>
}

/** Times one request (ms), checking it answered 200. */
async function timed(baseUrl: string, path: string, headers: Record<string, string>): Promise<number> {
  const start = performance.now()
  const res = await fetch(`${baseUrl}${path}`, { headers })
  await res.arrayBuffer()
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}`)
  return performance.now() - start
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const dir = ctx.tempDir('control-plane-visibility')
  await measure(
    ctx,
    'SQLite',
    () => startServer(ctx.productCommand('source', dir, undefined, 'control-plane')),
    async () => {},
  )
  const database = await createBenchDatabase(ctx, 'visibility')
  if (!database) return
  try {
    await measure(ctx, 'PostgreSQL', () => startPostgresInstance(ctx, database.url, 'visibility'), database.analyze)
  } finally {
    await database.drop()
  }
}

/**
 * Builds both organizations in one server on an engine and records its figures; `built` runs once
 * both exist (PostgreSQL's statistics, which autovacuum keeps on a real server).
 */
async function measure(
  ctx: BenchContext,
  engine: string,
  start: () => Promise<RunningServer>,
  built: () => Promise<void>,
): Promise<void> {
  const s = ctx.settings
  const servers: RunningServer[] = []
  try {
    const ours = await start()
    servers.push(ours)
    const call = httpCall(ours.baseUrl)
    const signUp = async (email: string, invitationToken?: string) => {
      const res = await fetch(`${ours.baseUrl}/v1/auth/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'bench password', name: email.split('@')[0], invitationToken }),
      })
      const body: any = await res.json()
      if (res.status !== 201) throw new Error(`sign-up ${email} answered ${res.status}: ${JSON.stringify(body)}`)
      return body.session.token as string
    }
    const ownerToken = await signUp('owner@bench.test')
    const orgs: VisibilityOrg[] = []
    for (const size of SIZES) orgs.push(await buildVisibilityOrg(call, signUp, ownerToken, size, ctx.log))
    await built()
    const targets: Target[] = []
    const lists = [
      ['GET /v1/me/skills', '/v1/me/skills?limit=50'],
      ['GET /v1/config-objects?type=skill', '/v1/config-objects?type=skill&limit=50'],
    ] as const
    for (const who of ['wide', 'narrow', 'hubs'] as const) {
      for (const [name, path] of lists) {
        const first: Target = { label: `${who} member ${name} first page`, bySize: new Map() }
        const deep: Target = { label: `${who} member ${name} deep page`, bySize: new Map() }
        for (const org of orgs) {
          const token = org[who]
          first.bySize.set(org.size, { token, path })
          const walked = await deepCursor(call, path, token)
          ctx.log(`${who} ${name} at ${org.size}: ${walked.pages} pages`)
          deep.bySize.set(org.size, { token, path: walked.cursor ? `${path}&cursor=${walked.cursor}` : path })
        }
        targets.push(first, deep)
      }
    }
    const owner: Target = { label: 'owner GET /v1/config-objects?type=skill first page (reference)', bySize: new Map() }
    for (const org of orgs)
      owner.bySize.set(org.size, {
        token: org.ownerToken,
        path: `/v1/config-objects?type=skill&limit=50`,
      })
    targets.push(owner)
    const ownerOrg = new Map(orgs.map((o) => [o.size, o.orgId]))
    const rounds = new Map<string, Array<{ baseline: number; ours: number }>>()
    for (let r = 0; r < s.rounds; r++) {
      for (const target of targets) {
        // Sizes alternate request by request (and which goes first alternates too), so load on
        // this shared machine falls on both sides of the ratio alike.
        const times = new Map<number, number[]>(SIZES.map((size) => [size, []]))
        for (let i = 0; i < REQUESTS_PER_SAMPLE; i++) {
          for (const size of (r + i) % 2 === 0 ? [...SIZES] : [...SIZES].reverse()) {
            const { token, path } = target.bySize.get(size)!
            const headers: Record<string, string> = { authorization: `Bearer ${token}` }
            // The owner's session acts in its active organization: pin each org by header.
            if (target === owner) headers['x-service-org-id'] = ownerOrg.get(size)!
            times.get(size)!.push(await timed(ours.baseUrl, path, headers))
          }
        }
        const pair = { baseline: median(times.get(SIZES[0])!), ours: median(times.get(SIZES[1])!) }
        rounds.set(target.label, [...(rounds.get(target.label) ?? []), pair])
        printRound(`${engine}: ${target.label}`, r, s.rounds, pair.ours, pair.baseline, 'ms p50')
      }
    }
    for (const target of targets) {
      const pairs = rounds.get(target.label)!
      ctx.record(
        makeFigure({
          caseName: 'control-plane-visibility',
          name: `${engine}: ${target.label} p50 at ${SIZES[1]} ÷ at ${SIZES[0]} skills`,
          unit: 'ms',
          subject: `bun bin/service-server.ts --mode control-plane on ${engine}, ${SIZES[1]} skills`,
          baselineLabel: `same request at ${SIZES[0]} skills`,
          rounds: pairs,
          target: target === owner ? undefined : { op: '<=', value: 1.3 },
          notes: [
            `${REQUESTS_PER_SAMPLE} sequential requests per sample; p50 ${round(median(pairs.map((p) => p.baseline)), 2)} ms → ${round(median(pairs.map((p) => p.ours)), 2)} ms`,
          ],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'control-plane-visibility',
  description:
    "a plain member's skill lists (first and deep page, wide and narrow reach) at 6,000 skills ÷ at 200, on SQLite and PostgreSQL; target ≤ 1.3",
  run,
})
