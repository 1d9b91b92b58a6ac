/**
 * The PostgreSQL driver choice and the control plane on PostgreSQL against its floor.
 *
 * Part 1, drivers: the same parameterised statements (session lookup, one keyset page of 50 config
 * objects out of 10,000, one config-object create in a SERIALIZABLE transaction) run sequentially
 * on one connection through `pg` (as kysely's PostgresDialect uses it: unnamed statements),
 * `postgres` (prepared statements) and `Bun.SQL` (prepared statements), drivers alternated per
 * round. Reported as µs per operation with each driver's ratio to `pg`; no target (the choice is
 * documented in bench/results/history.md with these figures).
 *
 * Part 2, the control plane on PostgreSQL next to its floor in the same run (issue 15 items 2 and
 * 3): `GET /v1/me`, `GET /v1/config-objects?limit=50&type=skill`, `GET /v1/members?limit=50`,
 * `GET /v1/me/skills?limit=50` (the owner, who holds a grant on each of the 2,500 skills) and
 * `POST /v1/config-objects` req/s (one instance from source, pool 10) divided by the operations per
 * second of the driver alone (`pg` with named statements, pool of 10, as many concurrent loops as
 * the load has connections) running what that request needs, written directly: the session lookup,
 * plus the page (for `/v1/me/skills` the page of received skills and the grants and hubs that are
 * their paths) or the create transaction (object, first version, search terms, audit row).
 * Targets: reads and creates ≥ 0.5.
 */
import { runLoad } from '../lib/load-driver.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import {
  closedLoop,
  createBenchDatabase,
  floorOperations,
  ownerWithOrg,
  pgDriver,
  seedConfigObjects,
  ownerSession,
  seedReachAndMembers,
  startPostgresInstance,
  type FloorDriver,
} from '../lib/pg-bench.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { fileURLToPath } from 'node:url'
import { median, round } from '../lib/stats.ts'

const OBJECTS = 10_000
const MEMBERS = 1_000
const SEQUENTIAL_WARMUP = 50
const SEQUENTIAL_OPS = 300
const DRIVER_ROUNDS = 3

/** Runs a transaction again on a serialization failure, as the product does. */
async function retrying(work: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await work()
      return
    } catch (error) {
      const code = (error as { code?: unknown; errno?: unknown }).code ?? (error as { errno?: unknown }).errno
      if ((code !== '40001' && code !== '40P01') || attempt >= 12) throw error
    }
  }
}

function postgresJsDriver(postgres: any, url: string, size: number): FloorDriver {
  const sql = postgres(url, { max: size, onnotice: () => {} })
  return {
    query: (text, params) => sql.unsafe(text, params, { prepare: true }),
    transaction: (work) =>
      retrying(() =>
        sql.begin('isolation level serializable', (tx: any) =>
          work((text, params) => tx.unsafe(text, params, { prepare: true })),
        ),
      ),
    close: () => sql.end(),
  }
}

function bunSqlDriver(url: string, size: number): FloorDriver | null {
  const BunSQL = (globalThis as { Bun?: { SQL?: new (url: string, options: object) => any } }).Bun?.SQL
  if (!BunSQL) return null
  const sql = new BunSQL(url, { max: size })
  return {
    query: (text, params) => sql.unsafe(text, params),
    transaction: (work) =>
      retrying(() =>
        sql.begin(async (tx: any) => {
          await tx.unsafe('set transaction isolation level serializable')
          await work((text, params) => tx.unsafe(text, params))
        }),
      ),
    close: () => sql.close(),
  }
}

async function sequentialMicros(op: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < SEQUENTIAL_WARMUP; i++) await op()
  const times: number[] = []
  for (let i = 0; i < SEQUENTIAL_OPS; i++) {
    const start = performance.now()
    await op()
    times.push((performance.now() - start) * 1000)
  }
  return median(times)
}

async function driverComparison(ctx: BenchContext, url: string, ids: Parameters<typeof floorOperations>[1]) {
  const { default: postgres } = await import('postgres')
  const drivers: Record<string, FloorDriver> = {
    pg: pgDriver(url, 1),
    'pg (named statements)': pgDriver(url, 1, { named: true }),
    postgres: postgresJsDriver(postgres, url, 1),
  }
  const bun = bunSqlDriver(url, 1)
  if (bun) drivers['Bun.SQL'] = bun
  else ctx.skip('Bun.SQL', 'not running under Bun')
  try {
    const names = Object.keys(drivers)
    const micros: Record<string, Record<string, number[]>> = {}
    for (let r = 0; r < DRIVER_ROUNDS; r++) {
      for (const name of r % 2 === 0 ? names : [...names].reverse()) {
        const { session, page, create } = floorOperations(drivers[name]!, ids)
        for (const [op, run] of Object.entries({ session, page, create })) {
          ;((micros[op] ??= {})[name] ??= []).push(await sequentialMicros(run))
        }
      }
      ctx.log(
        `driver round ${r + 1}/${DRIVER_ROUNDS}: ${Object.entries(micros)
          .map(([op, byDriver]) => `${op} ${names.map((n) => `${n} ${round(byDriver[n]!.at(-1)!, 0)}`).join(' / ')} µs`)
          .join('; ')}`,
      )
    }
    for (const [op, byDriver] of Object.entries(micros)) {
      for (const name of names.filter((n) => n !== 'pg')) {
        ctx.record(
          makeFigure({
            caseName: 'pg-drivers',
            name: `${op}: ${name} µs/op vs pg (sequential, one connection)`,
            unit: 'µs',
            subject: `${name}`,
            baselineLabel: 'pg (unnamed statements, as kysely sends them)',
            rounds: byDriver[name]!.map((ours, i) => ({ ours, baseline: byDriver.pg![i]! })),
            notes: [`median of ${SEQUENTIAL_OPS} operations per round after ${SEQUENTIAL_WARMUP} unmeasured`],
          }),
        )
      }
    }
  } finally {
    for (const driver of Object.values(drivers)) await driver.close()
  }
}

async function againstFloor(
  ctx: BenchContext,
  url: string,
  server: RunningServer,
  headers: Record<string, string>,
  ids: Parameters<typeof floorOperations>[1],
) {
  const s = ctx.settings
  // Named statements: the floor is the best `pg` itself can do, parsed and planned once per connection.
  const floorDriver = pgDriver(url, 10, { named: true })
  const base = ctx.baselineCommand()
  const floorServer = await startServer({
    ...base,
    label: 'pg-floor',
    stderrFile: base.stderrFile?.replace(/baseline(?=[^/]*$)/, 'pg-floor'),
    args: [
      fileURLToPath(new URL('../pg-floor-server.ts', import.meta.url)),
      '--database-url',
      url,
      ...base.args.slice(1),
    ],
  })
  try {
    await checkPages(floorServer.baseUrl, headers)
    const ops = floorOperations(floorDriver, ids)
    const subjects = [
      { label: 'GET /v1/me', path: '/v1/me', floor: ops.session, target: 0.5 },
      {
        label: 'GET /v1/config-objects?limit=50&type=skill',
        path: '/v1/config-objects?limit=50&type=skill',
        floor: async () => {
          await ops.session()
          await ops.page()
        },
        target: 0.5,
      },
      {
        label: 'GET /v1/members?limit=50',
        path: '/v1/members?limit=50',
        floor: async () => {
          await ops.session()
          await ops.members()
        },
        target: 0.5,
      },
      {
        label: 'GET /v1/me/skills?limit=50',
        path: '/v1/me/skills?limit=50',
        floor: async () => {
          await ops.session()
          await ops.mySkills()
        },
        target: 0.5,
      },
      {
        label: 'POST /v1/config-objects',
        // At 50 connections creates in one organization wait on each other's SERIALIZABLE retries
        // past the load tool's 5 s timeout; a smaller, equal concurrency on both sides measures throughput.
        connections: Math.min(s.connections, 8),
        path: '/v1/config-objects',
        method: 'POST',
        body: JSON.stringify({
          type: 'command',
          sourceMode: 'cloud',
          title: 'Bench create',
          input: { rawSourceText: 'Do the bench thing' },
        }),
        floor: async () => {
          await ops.session()
          await ops.create()
        },
        target: 0.5,
      },
    ]
    for (const subject of subjects) {
      const load = (seconds: number, target: RunningServer = server) =>
        runLoad({
          url: `${target.baseUrl}${subject.path}`,
          method: subject.method,
          headers: subject.body ? { ...headers, 'content-type': 'application/json' } : headers,
          body: subject.body,
          durationSec: seconds,
          connections: subject.connections ?? s.connections,
          tool: s.tool,
        })
      if (s.warmupSec > 0) {
        await closedLoop(subject.floor, subject.connections ?? s.connections, s.warmupSec)
        await load(s.warmupSec, floorServer)
        await load(s.warmupSec)
      }
      const rounds: Array<{ ours: number; baseline: number }> = []
      const loopRounds: Array<{ ours: number; baseline: number }> = []
      let bad = 0
      let total = 0
      const p50: number[] = []
      for (let r = 0; r < s.rounds; r++) {
        let floor = 0
        let loop = 0
        let ours = 0
        for (const side of r % 2 === 0 ? ['loop', 'floor', 'ours'] : ['ours', 'floor', 'loop']) {
          if (side === 'loop')
            loop = await closedLoop(subject.floor, subject.connections ?? s.connections, s.durationSec)
          else if (side === 'floor') {
            const result = await load(s.durationSec, floorServer)
            floor = result.rps
            bad += result.non2xx + result.errors
          } else {
            const result = await load(s.durationSec)
            ours = result.rps
            bad += result.non2xx + result.errors
            total += result.requests
            p50.push(result.latencyP50Ms)
          }
        }
        rounds.push({ ours, baseline: floor })
        loopRounds.push({ ours, baseline: loop })
        printRound(subject.label, r, s.rounds, ours, floor, 'req/s')
      }
      ctx.record(
        makeFigure({
          caseName: 'pg-drivers',
          name: `${subject.label} req/s on PostgreSQL vs the driver loop (no HTTP)`,
          unit: 'req/s',
          subject: `bun bin/service-server.ts --mode control-plane on PostgreSQL (pool 10, ${OBJECTS} objects)`,
          baselineLabel: 'the same statements in a loop in the bench process, no HTTP on its side',
          rounds: loopRounds,
          notes: ['informational: the floor of this row pays no HTTP, our side pays it and shares the cores with wrk'],
        }),
      )
      ctx.record(
        makeFigure({
          caseName: 'pg-drivers',
          name: `${subject.label} req/s on PostgreSQL vs driver floor`,
          unit: 'req/s',
          subject: `bun bin/service-server.ts --mode control-plane on PostgreSQL (pool 10, ${OBJECTS} objects)`,
          baselineLabel:
            'bench/pg-floor-server.ts: pg alone (named statements, pool 10) behind Bun.serve, same statements and body',
          rounds,
          target: { op: '>=', value: subject.target },
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${subject.connections ?? s.connections} connections; p50 ours ${round(median(p50), 2)} ms`,
          ],
        }),
      )
    }
  } finally {
    await floorDriver.close()
    await floorServer.stop()
  }
}

/** Every read subject answers a full page of 50 (a short page would flatter both sides). */
async function checkPages(baseUrl: string, headers: Record<string, string>): Promise<void> {
  for (const path of ['/v1/config-objects?limit=50&type=skill', '/v1/members?limit=50', '/v1/me/skills?limit=50']) {
    const res = await fetch(`${baseUrl}${path}`, { headers })
    const body = (await res.json()) as { items?: unknown[] }
    if (res.status !== 200 || body.items?.length !== 50)
      throw new Error(`${path} answered ${res.status} with ${body.items?.length ?? 'no'} items, expected 50`)
  }
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const database = await createBenchDatabase(ctx, 'pg_drivers')
  if (!database) return
  let server: RunningServer | undefined
  try {
    server = await startPostgresInstance(ctx, database.url, 'pg-drivers')
    const owner = await ownerWithOrg(server.baseUrl)
    ctx.log(`seeding ${OBJECTS} config objects, the owner's grants on the skills, ${MEMBERS} members`)
    await seedConfigObjects(database.url, owner.orgId, OBJECTS)
    await seedReachAndMembers(database.url, owner.orgId, owner.memberId, MEMBERS)
    await checkPages(server.baseUrl, owner.headers)
    const ids = { ...(await ownerSession(database.url)), orgId: owner.orgId, memberId: owner.memberId }
    await driverComparison(ctx, database.url, ids)
    await againstFloor(ctx, database.url, server, owner.headers, ids)
  } finally {
    await server?.stop()
    await database.drop()
  }
}

export default defineCase({
  name: 'pg-drivers',
  description:
    'PostgreSQL: pg vs postgres vs Bun.SQL on the same statements; control-plane reads and creates on PostgreSQL vs the driver floor (target ≥ 0.5)',
  run,
})
