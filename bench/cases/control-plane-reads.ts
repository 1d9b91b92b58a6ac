/**
 * Authenticated control-plane reads per second as ratios to the minimal Bun.serve JSON handler
 * measured in the same run: `GET /v1/me` (session lookup, organization resolution) and
 * `GET /v1/members?limit=50` in an organization of 10,000 members, both the first page and a
 * page deep in the list (cursor after member 9,000), which key-set pagination should answer at
 * the same cost. Sign-in itself is deliberately slow (scrypt) and is not measured.
 *
 * Set-up: the product starts on an empty data dir; the owner signs up and creates the
 * organization over HTTP; 10,000 members are then inserted straight into the SQLite file (a
 * second connection; WAL lets it write alongside the server), as sign-up would spend the time
 * in the KDF.
 */
import { join } from 'node:path'
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import type { ControlPlaneDb } from '../../src/control-plane/schema.ts'
import { seedMembers } from '../../src/control-plane/testing/seed.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const MEMBERS = 10_000

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`)
  return JSON.parse(text)
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('control-plane-reads')
  const cmd = ctx.productCommand('source', dir, undefined, 'control-plane')
  const servers: RunningServer[] = []
  try {
    const baseline = await startServer(ctx.baselineCommand())
    servers.push(baseline)
    const ours = await startServer(cmd)
    servers.push(ours)
    const signedUp = await json(
      await fetch(`${ours.baseUrl}/v1/auth/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'owner@bench.test', password: 'bench password', name: 'Owner' }),
      }),
      'sign-up',
    )
    const headers = { authorization: `Bearer ${signedUp.session.token}` }
    const org = await json(
      await fetch(`${ours.baseUrl}/v1/orgs`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bench' }),
      }),
      'create org',
    )
    ctx.log(`seeding ${MEMBERS} members`)
    const database = await openDatabase<ControlPlaneDb>({
      path: join(dir, 'control-plane.sqlite'),
      migrations: controlPlaneMigrations,
    })
    try {
      await seedMembers(database.db, org.item.id, MEMBERS - 1, 'bench')
    } finally {
      await database.close()
    }
    // Walk to member 9,000 with real cursors, so the deep page is one a client would reach.
    let cursor: string | null = null
    for (let i = 0; i < 90; i++) {
      const page: any = await json(
        await fetch(`${ours.baseUrl}/v1/members?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers }),
        'members walk',
      )
      cursor = page.nextCursor
    }
    const deepCursor = cursor!
    const paths: Record<string, string> = {
      'GET /v1/me': '/v1/me',
      'GET /v1/members?limit=50 (first page)': '/v1/members?limit=50',
      'GET /v1/members?limit=50 (after 9,000)': `/v1/members?limit=50&cursor=${deepCursor}`,
    }
    for (const [label, path] of Object.entries(paths)) {
      const body = await json(await fetch(`${ours.baseUrl}${path}`, { headers }), label)
      if (path.startsWith('/v1/members') && body.items.length !== 50)
        throw new Error(`${label}: expected 50 members, got ${body.items.length}`)
    }
    const targets: LoadTarget[] = [
      { key: 'baseline', url: `${baseline.baseUrl}/` },
      ...Object.entries(paths).map(([label, path]) => ({ key: label, url: `${ours.baseUrl}${path}`, headers })),
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => {
        for (const label of Object.keys(paths))
          printRound(label, r, s.rounds, res[label]!.rps, res.baseline!.rps, 'req/s')
      },
    })
    for (const label of Object.keys(paths)) {
      const mine = results[label]!
      const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = mine.reduce((a, x) => a + x.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'control-plane-reads',
          name: `${label} req/s`,
          unit: 'req/s',
          subject: `bun bin/service-server.ts --mode control-plane (${MEMBERS} members, session auth)`,
          baselineLabel: 'Bun.serve JSON',
          rounds: mine.map((x, i) => ({ baseline: results.baseline![i]!.rps, ours: x.rps })),
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p50 ours ${round(median(mine.map((x) => x.latencyP50Ms)), 2)} ms, p99 ${round(median(mine.map((x) => x.latencyP99Ms)), 2)} ms`,
          ],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'control-plane-reads',
  description:
    'GET /v1/me and GET /v1/members (10,000 members, page of 50, first and deep page) req/s vs Bun.serve JSON baseline',
  run,
})
