/**
 * Shared set-up for the PostgreSQL bench cases: a throw-away database (C collation, as
 * docs/deployment.md recommends) on the bench server, product instances started on it, an owner
 * with an organization, 10,000 config objects seeded in SQL, and the driver-only floor: the
 * queries one request of each kind sends, run straight on a driver with no HTTP and no kysely.
 *
 * The server is `BENCH_DATABASE_URL`, else `SERVICE_TEST_DATABASE_URL`, else the loopback
 * development server; a case skips (with the reason) when it does not answer.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { BenchContext } from './bench-case.ts'
import { startServer, type RunningServer } from './server-process.ts'

/** The admin URL of the bench's PostgreSQL server. */
export function benchServerUrl(): string {
  return (
    process.env.BENCH_DATABASE_URL ??
    process.env.SERVICE_TEST_DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/postgres'
  )
}

/** A fresh database for one case; `drop()` removes it (call in `finally`). */
export interface BenchDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

async function admin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: benchServerUrl(), connectionTimeoutMillis: 3_000 })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** Creates an empty database, or returns null (and records a skip) when the server does not answer. */
export async function createBenchDatabase(ctx: BenchContext, label: string): Promise<BenchDatabase | null> {
  const name = `bench_${label.replace(/[^a-z0-9]/g, '_')}_${process.pid}_${Date.now().toString(36)}`
  try {
    await admin((c) => c.query(`create database ${name} template template0 lc_collate 'C' lc_ctype 'C'`))
  } catch (error) {
    ctx.skip(label, `PostgreSQL at ${new URL(benchServerUrl()).host} did not answer: ${(error as Error).message}`)
    return null
  }
  const url = new URL(benchServerUrl())
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  }
}

/** One encryption key for every instance of a run: instances on one database must share it. */
const ENCRYPTION_KEY = randomBytes(32).toString('hex')

/** Starts the product from source on `databaseUrl`. */
export function startPostgresInstance(
  ctx: BenchContext,
  databaseUrl: string,
  label: string,
  env: Record<string, string> = {},
): Promise<RunningServer> {
  const cmd = ctx.productCommand('source', ctx.tempDir(label), undefined, 'control-plane')
  return startServer(
    {
      ...cmd,
      label: `ours(${label})`,
      env: { ...cmd.env, SERVICE_DATABASE_URL: databaseUrl, SERVICE_ENCRYPTION_KEY: ENCRYPTION_KEY, ...env },
    },
    60_000,
  )
}

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`)
  return JSON.parse(text)
}

/** Signs up the owner and creates the organization over HTTP; returns the session header and ids. */
export async function ownerWithOrg(
  baseUrl: string,
): Promise<{ headers: Record<string, string>; orgId: string; memberId: string }> {
  const signedUp = await json(
    await fetch(`${baseUrl}/v1/auth/sign-up`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@bench.test', password: 'bench password', name: 'Owner' }),
    }),
    'sign-up',
  )
  const headers = { authorization: `Bearer ${signedUp.session.token}` }
  const org = await json(
    await fetch(`${baseUrl}/v1/orgs`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench' }),
    }),
    'create org',
  )
  const me = await json(await fetch(`${baseUrl}/v1/me`, { headers }), 'me')
  return { headers, orgId: org.item.id, memberId: me.member.id }
}

/** Inserts `count` config objects (a quarter skills) with one version each, in SQL on the server side. */
export async function seedConfigObjects(url: string, orgId: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('begin')
    // Ids sort like the product's (time-sortable, fixed width), and come before anything created later.
    await client.query(
      `insert into config_object (id, org_id, object_type, source_mode, title, description, name, status,
         latest_version_id, version_count, latest_created_via, latest_created_at, created_at, updated_at)
       select 'cob_0000' || lpad(i::text, 22, '0'), $1,
         case when i % 4 = 0 then 'skill' else (array['agent','command','tool','mcp','hook','context','custom'])[1 + i % 7] end,
         'cloud', 'Object ' || i, 'Bench object number ' || i, 'object-' || i, 'active',
         'cov_0000' || lpad(i::text, 22, '0'), 1, 'cloud', now()::text, now()::text, now()::text
       from generate_series(1, $2::int) as i`,
      [orgId, count],
    )
    await client.query(
      `insert into config_object_version (id, org_id, config_object_id, number, raw_source_text, normalized_payload, created_via, created_at)
       select 'cov_0000' || lpad(i::text, 22, '0'), $1, 'cob_0000' || lpad(i::text, 22, '0'), 1,
         '---' || chr(10) || 'name: object-' || i || chr(10) || 'description: Bench object' || chr(10) || '---' || chr(10) || 'Steps.',
         '{"name":"object-' || i || '","description":"Bench object","body":"Steps.","metadata":{}}', 'cloud', now()::text
       from generate_series(1, $2::int) as i`,
      [orgId, count],
    )
    await client.query('commit')
    await client.query('analyze')
  } finally {
    await client.end()
  }
}

/** The token hash of the one session the owner holds (the floor looks it up as the server does). */
export async function sessionTokenHash(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query('select token_hash from user_session order by created_at limit 1')).rows[0].token_hash
  } finally {
    await client.end()
  }
}

/** Parameterised statements, in the shape the product sends them. */
export const FLOOR_SQL = {
  /** Every authenticated request: session, user and membership in one round trip. */
  session: `select s.id as session_id, s.active_org_id, s.expires_at, s.refreshed_at, u.id, u.email, u.name, u.created_at,
      m.id as member_id, m.role, o.id as org_id, o.name as org_name
    from user_session as s inner join app_user as u on u.id = s.user_id
    left join member as m on m.user_id = s.user_id and m.org_id = coalesce($1, s.active_org_id)
    left join organization as o on o.id = m.org_id
    where s.token_hash = $2`,
  /** One keyset page of 50 skills (51 rows read to know whether there is a next page). */
  page: `select id, org_id, object_type, source_mode, title, description, name, status, connector_instance_id,
      created_by_member_id, latest_version_id, version_count, latest_created_via, latest_created_by_member_id,
      latest_source_revision_ref, latest_created_at, created_at, updated_at, archived_at
    from config_object where org_id = $1 and object_type = $2 and status = $3 and deleted_at is null and id > $4
    order by id limit 51`,
  insertObject: `insert into config_object (id, org_id, object_type, source_mode, title, description, name, status,
      created_by_member_id, latest_version_id, version_count, latest_created_via, latest_created_by_member_id,
      latest_created_at, created_at, updated_at) values ($1, $2, 'command', 'cloud', $3, null, $4, 'active', $5, $6, 1, 'cloud', $5, $7, $7, $7)`,
  insertVersion: `insert into config_object_version (id, org_id, config_object_id, number, raw_source_text, normalized_payload,
      created_via, created_by_member_id, created_at) values ($1, $2, $3, 1, $4, $5, 'cloud', $6, $7)`,
  insertTerms: `insert into config_object_term (org_id, term, config_object_id) values ($1, $2, $3), ($1, $4, $3)`,
}

/** The three operations of the floor, written once over a minimal driver interface. */
export interface FloorDriver {
  query(text: string, params: unknown[]): Promise<unknown>
  /** Runs `work` in one SERIALIZABLE transaction on one connection. */
  transaction(work: (q: (text: string, params: unknown[]) => Promise<unknown>) => Promise<void>): Promise<void>
  close(): Promise<void>
}

let created = 0

/** Operations by name: what one `GET /v1/me`, one page and one create cost the database. */
export function floorOperations(
  driver: FloorDriver,
  ids: { tokenHash: string; orgId: string; memberId: string },
): Record<'session' | 'page' | 'create', () => Promise<unknown>> {
  return {
    session: () => driver.query(FLOOR_SQL.session, [null, ids.tokenHash]),
    page: () => driver.query(FLOOR_SQL.page, [ids.orgId, 'skill', 'active', '']),
    create: () =>
      driver.transaction(async (q) => {
        const n = `${process.pid}${Date.now().toString(36)}${(created++).toString(36)}`
        const now = new Date().toISOString()
        const text = `Do the floor thing ${n}`
        await q(FLOOR_SQL.insertObject, [
          `cob_floor_${n}`,
          ids.orgId,
          `Floor ${n}`,
          `floor-${n}`,
          ids.memberId,
          `cov_floor_${n}`,
          now,
        ])
        await q(FLOOR_SQL.insertVersion, [
          `cov_floor_${n}`,
          ids.orgId,
          `cob_floor_${n}`,
          text,
          JSON.stringify({ content: text }),
          ids.memberId,
          now,
        ])
        await q(FLOOR_SQL.insertTerms, [ids.orgId, 'floor', `cob_floor_${n}`, n])
      }),
  }
}

/** PostgreSQL's serialization failure or deadlock: the transaction may simply run again. */
export function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '40001' || code === '40P01'
}

/** `pg` used the way kysely's PostgresDialect uses it: unnamed statements on a pool. */
export function pgDriver(url: string, size: number, options: { named?: boolean } = {}): FloorDriver {
  const pool = new pg.Pool({ connectionString: url, max: size })
  // Named statements are parsed and planned once per connection; kysely sends unnamed ones.
  const names = new Map<string, string>()
  const statement = (text: string, values: unknown[]) => {
    if (!options.named) return { text, values }
    let name = names.get(text)
    if (!name) names.set(text, (name = `bench_${names.size}`))
    return { name, text, values }
  }
  return {
    query: (text, params) => pool.query(statement(text, params)),
    async transaction(work) {
      // Retried on a serialization failure, as the product's transactions are.
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect()
        try {
          await client.query('begin isolation level serializable')
          await work((text, params) => client.query(statement(text, params)))
          await client.query('commit')
          return
        } catch (error) {
          await client.query('rollback').catch(() => {})
          if (!isRetryable(error) || attempt >= 12) throw error
        } finally {
          client.release()
        }
      }
    },
    close: () => pool.end(),
  }
}

/** Runs `op` from `concurrency` loops for `seconds`; returns completed operations per second. */
export async function closedLoop(op: () => Promise<unknown>, concurrency: number, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000
  let done = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await op()
        done++
      }
    }),
  )
  return done / ((performance.now() - started) / 1000)
}
