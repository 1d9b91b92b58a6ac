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
  /**
   * Refreshes the planner's statistics, as autovacuum would after a bulk load. Call it after
   * building data through the API: this machine's PostgreSQL runs with autovacuum off, and with
   * no statistics the planner takes a 2,500-row range for one row and nests the visibility set
   * inside it (a member's page took 10 s instead of 2 ms).
   */
  analyze(): Promise<void>
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
    analyze: async () => {
      const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 3_000 })
      await client.connect()
      try {
        await client.query('analyze')
      } finally {
        await client.end()
      }
    },
    // A pool's end() resolves before its connections have closed; forcing the drop while one is
    // still closing sends it a FATAL that an ended client has no listener for (the bench process
    // crashed on it). So wait, briefly, for this process's connections to go first.
    drop: () =>
      admin(async (c) => {
        for (let i = 0; i < 40; i++) {
          const open = await c.query('select count(*)::int as n from pg_stat_activity where datname = $1', [name])
          if (open.rows[0].n === 0) break
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        await c.query(`drop database if exists ${name} with (force)`)
      }),
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
      env: {
        ...cmd.env,
        SERVICE_DATABASE_URL: databaseUrl,
        SERVICE_ENCRYPTION_KEY: ENCRYPTION_KEY,
        // All load comes from one address. Requests of a finished load run that the server is still
        // answering count against the per-address cap (64), so a run that follows at once on a
        // loaded machine got 503 server_busy for up to two thirds of its requests.
        SERVICE_MAX_REQUESTS_PER_ADDRESS: '1000',
        ...env,
      },
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

/**
 * Gives the member a manager grant on every seeded skill (as creating them through the API would),
 * so `GET /v1/me/skills` lists them; and adds `count` members (users that cannot sign in) for the
 * members page.
 */
export async function seedReachAndMembers(url: string, orgId: string, memberId: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('begin')
    await client.query(
      `insert into access_grant (id, org_id, resource_type, resource_id, member_id, team_id, org_wide, principal_key,
         role, created_by_member_id, created_at, updated_at)
       select 'agr_0000' || substr(co.id, 9), co.org_id, 'config_object', co.id, $2, null, 0, 'member:' || $2,
         'manager', $2, now()::text, now()::text
       from config_object co where co.org_id = $1 and co.object_type = 'skill'`,
      [orgId, memberId],
    )
    await client.query(
      `insert into app_user (id, email, name, password_hash, created_at, updated_at)
       select 'usr_0000' || lpad(i::text, 22, '0'), 'seed-' || i || '@bench.test', 'Seed ' || i, 'seeded$no-sign-in',
         now()::text, now()::text
       from generate_series(1, $1::int) as i`,
      [count],
    )
    await client.query(
      `insert into member (id, org_id, user_id, role, created_at, updated_at)
       select 'mem_0000' || lpad(i::text, 22, '0'), $1, 'usr_0000' || lpad(i::text, 22, '0'), 'member', now()::text, now()::text
       from generate_series(1, $2::int) as i`,
      [orgId, count],
    )
    await client.query('commit')
    await client.query('analyze')
  } finally {
    await client.end()
  }
}

/** The token hash and user of the one session the owner holds (the floor looks it up as the server does). */
export async function ownerSession(url: string): Promise<{ tokenHash: string; userId: string }> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const row = (await client.query('select token_hash, user_id from user_session order by created_at limit 1')).rows[0]
    return { tokenHash: row.token_hash, userId: row.user_id }
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
  /** One keyset page of 50 members with their user's email and name. */
  members: `select m.id, m.user_id, m.role, m.created_at, m.updated_at, u.email, u.name
    from member as m inner join app_user as u on u.id = m.user_id
    where m.org_id = $1 and m.id > $2 order by m.id limit 51`,
  /**
   * One keyset page of 50 active skills the member receives (a grant to them, their team or the
   * organization, or a hub assigned to any of those), with the latest version's payload.
   */
  mySkills: `select co.id, co.name, co.title, co.status, co.created_at, co.updated_at, v.id as version_id,
      v.number as version_number, v.normalized_payload, v.files
    from config_object as co inner join config_object_version as v on v.id = co.latest_version_id
    where co.org_id = $1 and co.object_type = 'skill' and co.status = 'active' and co.deleted_at is null and co.id > $3
      and (exists (select 1 from access_grant g where g.resource_type = 'config_object' and g.resource_id = co.id
              and (g.member_id = $2 or g.org_wide = 1 or g.team_id in (select tm.team_id from team_member tm where tm.member_id = $2)))
        or exists (select 1 from skill_hub_skill shs inner join skill_hub_assignment a on a.hub_id = shs.hub_id
              where shs.config_object_id = co.id
              and (a.member_id = $2 or a.org_wide = 1 or a.team_id in (select tm.team_id from team_member tm where tm.member_id = $2))))
    order by co.id limit 51`,
  /** The grants that put a page's skills in the member's reach (the "paths" of the response). */
  mySkillGrants: `select resource_id, member_id, team_id, org_wide from access_grant
    where resource_type = 'config_object' and resource_id = any($1)
      and (member_id = $2 or org_wide = 1 or team_id in (select team_id from team_member where member_id = $2))`,
  /** The hubs that put a page's skills in the member's reach. */
  mySkillHubs: `select shs.config_object_id, h.id as hub_id, h.name as hub_name, a.member_id, a.team_id, a.org_wide
    from skill_hub_skill as shs inner join skill_hub as h on h.id = shs.hub_id
    inner join skill_hub_assignment as a on a.hub_id = h.id
    where shs.config_object_id = any($1)
      and (a.member_id = $2 or a.org_wide = 1 or a.team_id in (select team_id from team_member where member_id = $2))`,
  insertObject: `insert into config_object (id, org_id, object_type, source_mode, title, description, name, status,
      created_by_member_id, latest_version_id, version_count, latest_created_via, latest_created_by_member_id,
      latest_created_at, created_at, updated_at) values ($1, $2, 'command', 'cloud', $3, null, $4, 'active', $5, $6, 1, 'cloud', $5, $7, $7, $7)`,
  insertVersion: `insert into config_object_version (id, org_id, config_object_id, number, raw_source_text, normalized_payload,
      created_via, created_by_member_id, created_at) values ($1, $2, $3, 1, $4, $5, 'cloud', $6, $7)`,
  insertTerms: `insert into config_object_term (org_id, term, config_object_id) values ($1, $2, $3), ($1, $4, $3)`,
  insertAudit: `insert into audit_event (id, org_id, action, actor_user_id, actor_member_id, credential_kind, api_key_id,
      target_type, target_id, data, created_at) values ($1, $2, 'config_object.created', $3, $4, 'session', null,
      'config_object', $5, $6, $7)`,
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
  ids: { tokenHash: string; orgId: string; memberId: string; userId: string },
): Record<'session' | 'page' | 'members' | 'mySkills', () => Promise<unknown>> & {
  /** Creates one command with the given title and source; resolves with the new object's id. */
  create(title?: string, text?: string): Promise<string>
} {
  return {
    session: () => driver.query(FLOOR_SQL.session, [null, ids.tokenHash]),
    page: () => driver.query(FLOOR_SQL.page, [ids.orgId, 'skill', 'active', '']),
    members: () => driver.query(FLOOR_SQL.members, [ids.orgId, '']),
    mySkills: async () => {
      const page = (await driver.query(FLOOR_SQL.mySkills, [ids.orgId, ids.memberId, ''])) as {
        rows: Array<{ id: string }>
      }
      const pageIds = page.rows.slice(0, 50).map((row) => row.id)
      if (pageIds.length === 0) return
      await driver.query(FLOOR_SQL.mySkillGrants, [pageIds, ids.memberId])
      await driver.query(FLOOR_SQL.mySkillHubs, [pageIds, ids.memberId])
    },
    create: async (title, source) => {
      const n = `${process.pid}${Date.now().toString(36)}${(created++).toString(36)}`
      await driver.transaction(async (q) => {
        const now = new Date().toISOString()
        const text = source ?? `Do the floor thing ${n}`
        await q(FLOOR_SQL.insertObject, [
          `cob_floor_${n}`,
          ids.orgId,
          title ?? `Floor ${n}`,
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
        await q(FLOOR_SQL.insertAudit, [
          `aud_floor_${n}`,
          ids.orgId,
          ids.userId,
          ids.memberId,
          `cob_floor_${n}`,
          JSON.stringify({ objectType: 'command', versionId: `cov_floor_${n}` }),
          now,
        ])
      })
      return `cob_floor_${n}`
    },
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
      // Retried on a serialization failure, as the product's transactions are, with the same backoff.
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
        // The product's jittered backoff (src/storage/serializable-transactions.ts): contenders
        // retrying at once collide again, and at 12 attempts the floor itself would give up.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(200, 4 * 2 ** attempt)))
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
