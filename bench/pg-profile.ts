/**
 * Where a control-plane request's time goes on PostgreSQL, in process: for each request that
 * `pg-drivers` compares with its floor, the statements it sends (counted by wrapping `pg`'s
 * `Client.prototype.query`, so every connection of the pool is seen; transaction control included)
 * and the CPU it costs the server process and PostgreSQL's backends (from `/proc`, so a loaded
 * machine slows both sides but does not change the cost per request much), next to the floor: the
 * same work written directly on `pg` with named statements (`bench/lib/pg-bench.ts`).
 *
 * Usage: bun bench/pg-profile.ts [--seconds 3] [--concurrency 16] [--statements] [--only <text>]
 * (`--statements` prints each request's statements with their round-trip time; `--only` keeps the
 * requests whose label contains the text, for `bun --cpu-prof` of one route). The server is
 * `BENCH_DATABASE_URL`, else `SERVICE_TEST_DATABASE_URL`, else the loopback server; the script
 * makes a throw-away database and drops it at the end. Linux only (`/proc`).
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { createControlPlaneApp } from '../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../src/control-plane/config.ts'
import { silentLogger } from '../src/core/logger.ts'
import type { BenchContext } from './lib/bench-case.ts'
import {
  createBenchDatabase,
  floorOperations,
  pgDriver,
  seedConfigObjects,
  seedReachAndMembers,
} from './lib/pg-bench.ts'

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) || fallback : fallback
}
const SECONDS = arg('--seconds', 3)
const CONCURRENCY = arg('--concurrency', 16)
const SHOW_STATEMENTS = process.argv.includes('--statements')
// `--only <text>` keeps the requests whose label contains it (for a `bun --cpu-prof` of one route).
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined
const TICKS = 100

/** User + system CPU seconds of each given process that is still there. */
function cpuSeconds(pids: number[]): Map<number, number> {
  const seconds = new Map<number, number>()
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      seconds.set(pid, (Number(fields[11]) + Number(fields[12])) / TICKS)
    } catch {
      // a backend that ended
    }
  }
  return seconds
}

/** CPU used between two readings by the processes seen in the second (new ones from zero). */
function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0)
  return total
}

function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')
      } catch {
        return false
      }
    })
}

// Every statement any pg client sends while `recording` is set.
let recording: string[] | null = null
const originalQuery = pg.Client.prototype.query
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const started = performance.now()
  const result = (originalQuery as (...a: unknown[]) => unknown).apply(this, args)
  if (recording) {
    const config = args[0] as string | { text?: string; name?: string }
    const text = typeof config === 'string' ? config : (config.text ?? '')
    const named = typeof config === 'object' && config.name ? ' [named]' : ''
    const log = recording
    const index = log.push(`${text.replace(/\s+/g, ' ').slice(0, 110)}${named}`) - 1
    void (result as Promise<unknown>)?.then?.(
      () => {
        log[index] = `${(performance.now() - started).toFixed(2).padStart(6)} ms  ${log[index]}`
      },
      () => {},
    )
  }
  return result
} as typeof pg.Client.prototype.query

async function perSecond(op: () => Promise<unknown>): Promise<{ rate: number; ourCpu: number; pgCpu: number }> {
  const until = performance.now() + SECONDS * 1000
  const ours0 = cpuSeconds([process.pid])
  const pg0 = cpuSeconds(postgresPids())
  const started = performance.now()
  let done = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        await op()
        done++
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  return {
    rate: done / elapsed,
    ourCpu: (cpuBetween(ours0, cpuSeconds([process.pid])) / done) * 1e6,
    pgCpu: (cpuBetween(pg0, cpuSeconds(postgresPids())) / done) * 1e6,
  }
}

const ctx = { skip: (label: string, reason: string) => console.log(`skipped ${label}: ${reason}`) }
const database = await createBenchDatabase(ctx as unknown as BenchContext, 'pg_profile')
if (!database) process.exit(0)
const dir = mkdtempSync(join(tmpdir(), 'svc-pg-profile-'))
let floorDriver: ReturnType<typeof pgDriver> | undefined
try {
  const base = loadControlPlaneConfig({}, {}, dir)
  const app = await createControlPlaneApp(
    {
      ...base,
      dataDir: dir,
      databasePath: join(dir, 'unused.sqlite'),
      databaseUrl: database.url,
      encryptionKeyFile: join(dir, 'encryption.key'),
      logRequests: false,
      openSignUp: true,
    },
    { logger: silentLogger },
  )
  try {
    const send = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await app.fetch(
        new Request(`http://127.0.0.1${path}`, {
          method,
          headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      const text = await res.text()
      if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`)
      return JSON.parse(text)
    }
    const signedUp = await send(
      'POST',
      '/v1/auth/sign-up',
      {},
      {
        email: 'owner@bench.test',
        password: 'bench password',
        name: 'Owner',
      },
    )
    const headers = { authorization: `Bearer ${signedUp.session.token}` }
    const org = await send('POST', '/v1/orgs', headers, { name: 'Bench' })
    const me = await send('GET', '/v1/me', headers)
    console.log('seeding 10,000 config objects, the owner’s grants on the 2,500 skills, 1,000 members')
    await seedConfigObjects(database.url, org.item.id, 10_000)
    await seedReachAndMembers(database.url, org.item.id, me.member.id, 1_000)
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    const session = (await admin.query('select token_hash, user_id from user_session limit 1')).rows[0]
    await admin.end()
    floorDriver = pgDriver(database.url, 10, { named: true })
    const floor = floorOperations(floorDriver, {
      tokenHash: session.token_hash,
      userId: session.user_id,
      orgId: org.item.id,
      memberId: me.member.id,
    })
    let created = 0
    const subjects: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      ['GET /v1/me', () => send('GET', '/v1/me', headers), floor.session],
      [
        'GET /v1/config-objects?limit=50&type=skill',
        () => send('GET', '/v1/config-objects?limit=50&type=skill', headers),
        () => floor.session().then(floor.page),
      ],
      [
        'GET /v1/members?limit=50',
        () => send('GET', '/v1/members?limit=50', headers),
        () => floor.session().then(floor.members),
      ],
      [
        'GET /v1/me/skills?limit=50',
        () => send('GET', '/v1/me/skills?limit=50', headers),
        () => floor.session().then(floor.mySkills),
      ],
      [
        'POST /v1/config-objects',
        () =>
          send('POST', '/v1/config-objects', headers, {
            type: 'command',
            sourceMode: 'cloud',
            title: `Profile create ${created++}`,
            input: { rawSourceText: 'Do the profile thing' },
          }),
        () => floor.session().then(() => floor.create()),
      ],
    ]
    console.log(`\n${CONCURRENCY} concurrent loops, ${SECONDS} s each, in process (no HTTP socket on our side)`)
    console.log(
      'request | statements | ours/s | floor/s | ratio | CPU µs per request: ours server + PostgreSQL | floor',
    )
    for (const [label, ours, floorOp] of subjects) {
      if (ONLY && !label.includes(ONLY)) continue
      await ours()
      recording = []
      const log = recording
      await ours()
      recording = null
      await perSecond(ours)
      await perSecond(floorOp)
      const a = await perSecond(ours)
      const b = await perSecond(floorOp)
      console.log(
        `${label} | ${log.length} | ${a.rate.toFixed(0)} | ${b.rate.toFixed(0)} | ${(a.rate / b.rate).toFixed(2)} | ` +
          `${a.ourCpu.toFixed(0)} + ${a.pgCpu.toFixed(0)} | ${b.ourCpu.toFixed(0)} + ${b.pgCpu.toFixed(0)}`,
      )
      if (SHOW_STATEMENTS) for (const line of log) console.log(`    ${line}`)
    }
  } finally {
    await app.close()
  }
} finally {
  await floorDriver?.close()
  await database.drop()
  rmSync(dir, { recursive: true, force: true })
}
