/**
 * The PostgreSQL stack floor as an HTTP server, for `pg-drivers`: what `floor-server.ts` is for
 * SQLite. Each request does what the product must and nothing else, written directly on `pg` with
 * named statements (pool 10): the bearer token hashed and the session looked up (session, user,
 * membership and organization in one statement, expiry checked), then the page, the members page,
 * the received skills with their grants and hubs, or the create transaction (object, first
 * version, search terms, audit row; SERIALIZABLE, retried); the response body in the product's
 * shape with the contract's headers. No framework, no query builder, no validation.
 *
 * Why a server: the in-process floor of `lib/pg-bench.ts` runs the statements in a loop with no
 * HTTP at all, while our side is measured through wrk; the HTTP parsing and writing on both the
 * server and wrk (sharing the same cores) then count against us alone. Served like this the floor
 * pays them too, as the SQLite floor always has.
 *
 * Usage: bun bench/pg-floor-server.ts --database-url <url> [--port 0] [--host 127.0.0.1]
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { permissionsOf, type Role } from '../src/control-plane/policy.ts'
import { FLOOR_SQL, pgDriver } from './lib/pg-bench.ts'

const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const driver = pgDriver(flag('database-url', ''), 10, { named: true })
const query = async (text: string, params: unknown[]) => ((await driver.query(text, params)) as { rows: any[] }).rows
const prefix = `req_${randomBytes(8).toString('hex')}`
let counter = 101_559_956_668_416
let created = 0

function respond(body: string, status = 200): Response {
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': prefix + (++counter).toString(36),
    'x-content-type-options': 'nosniff',
  }
  return status === 200 ? new Response(body, { headers }) : new Response(body, { status, headers })
}

const cursorOf = (scope: string, id: string) =>
  Buffer.from(JSON.stringify({ s: scope, k: [id], f: 'floor-fingerprint' }), 'utf8').toString('base64url')

function page<T>(rows: any[], scope: string, map: (row: any) => T): string {
  const more = rows.length > 50
  const items = (more ? rows.slice(0, 50) : rows).map(map)
  return JSON.stringify({ items, nextCursor: more ? cursorOf(scope, rows[49].id) : null })
}

const objectView = (row: any) => ({
  id: row.id,
  type: row.object_type,
  sourceMode: row.source_mode,
  title: row.title,
  description: row.description,
  name: row.name,
  status: row.status,
  connectorInstanceId: row.connector_instance_id,
  createdByMemberId: row.created_by_member_id,
  versionCount: row.version_count,
  latestVersion: row.latest_version_id
    ? {
        id: row.latest_version_id,
        number: row.version_count,
        createdVia: row.latest_created_via,
        createdByMemberId: row.latest_created_by_member_id,
        sourceRevisionRef: row.latest_source_revision_ref,
        createdAt: row.latest_created_at,
      }
    : null,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  archivedAt: row.archived_at,
  deletedAt: null,
})

const permissions = new Map<string, string[]>()
const me = (s: any) => {
  let perms = permissions.get(s.role)
  if (!perms) permissions.set(s.role, (perms = permissionsOf(s.role as Role, 'session')))
  return JSON.stringify({
    user: { id: s.id, email: s.email, name: s.name, createdAt: s.created_at },
    credential: { kind: 'session', sessionId: s.session_id, expiresAt: s.expires_at },
    organization: { id: s.org_id, name: s.org_name },
    member: { id: s.member_id, role: s.role, permissions: perms },
  })
}

const via = (row: any) => (row.member_id ? 'member' : row.team_id ? 'team' : 'organization')

async function mySkills(s: any): Promise<string> {
  const rows = await query(FLOOR_SQL.mySkills, [s.org_id, s.member_id, ''])
  const shown = rows.slice(0, 50)
  const ids = shown.map((row) => row.id)
  const [grants, hubs] = ids.length
    ? [await query(FLOOR_SQL.mySkillGrants, [ids, s.member_id]), await query(FLOOR_SQL.mySkillHubs, [ids, s.member_id])]
    : [[], []]
  return JSON.stringify({
    items: shown.map((row) => ({
      skill: {
        id: row.id,
        name: row.name,
        title: row.title,
        status: row.status,
        version: { id: row.version_id, number: row.version_number },
        payload: row.normalized_payload,
        files: row.files,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      },
      paths: [
        ...grants
          .filter((g) => g.resource_id === row.id)
          .map((g) => ({ via: 'grant', hubId: null, hubName: null, principal: via(g), teamId: g.team_id })),
        ...hubs
          .filter((h) => h.config_object_id === row.id)
          .map((h) => ({ via: 'hub', hubId: h.hub_id, hubName: h.hub_name, principal: via(h), teamId: h.team_id })),
      ],
    })),
    nextCursor: rows.length > 50 ? cursorOf('my-skills', rows[49].id) : null,
  })
}

async function create(s: any, body: any): Promise<string> {
  const n = `${process.pid}${Date.now().toString(36)}${(created++).toString(36)}`
  const now = new Date().toISOString()
  const text = String(body.input?.rawSourceText ?? '')
  await driver.transaction(async (q) => {
    await q(FLOOR_SQL.insertObject, [
      `cob_floor_${n}`,
      s.org_id,
      body.title,
      `floor-${n}`,
      s.member_id,
      `cov_floor_${n}`,
      now,
    ])
    await q(FLOOR_SQL.insertVersion, [
      `cov_floor_${n}`,
      s.org_id,
      `cob_floor_${n}`,
      text,
      JSON.stringify({ content: text }),
      s.member_id,
      now,
    ])
    await q(FLOOR_SQL.insertTerms, [s.org_id, 'floor', `cob_floor_${n}`, n])
    await q(FLOOR_SQL.insertAudit, [
      `aud_floor_${n}`,
      s.org_id,
      s.id,
      s.member_id,
      `cob_floor_${n}`,
      JSON.stringify({ objectType: body.type, versionId: `cov_floor_${n}` }),
      now,
    ])
  })
  const [row] = await query(`${FLOOR_SQL.page.split(' from ')[0]} from config_object where id = $1`, [`cob_floor_${n}`])
  return JSON.stringify({ item: objectView(row) })
}

async function handle(request: Request): Promise<Response> {
  const header = request.headers.get('authorization') ?? ''
  const token = header.startsWith('Bearer ') ? header.slice(7) : ''
  const [s] = await query(FLOOR_SQL.session, [null, createHash('sha256').update(token).digest('hex')])
  if (!s || Date.parse(s.expires_at) <= Date.now() || !s.member_id)
    return respond('{"code":"unauthorized","message":"Invalid or expired session"}', 401)
  const path = request.url.slice(request.url.indexOf('/', 8)).split('?')[0]
  switch (path) {
    case '/v1/me':
      return respond(me(s))
    case '/v1/config-objects':
      if (request.method === 'POST') return respond(await create(s, await request.json()), 201)
      return respond(page(await query(FLOOR_SQL.page, [s.org_id, 'skill', 'active', '']), 'config-objects', objectView))
    case '/v1/members':
      return respond(
        page(await query(FLOOR_SQL.members, [s.org_id, '']), 'members', (r) => ({
          id: r.id,
          userId: r.user_id,
          email: r.email,
          name: r.name,
          role: r.role,
          createdAt: r.created_at,
          updatedAt: r.updated_at,
        })),
      )
    case '/v1/me/skills':
      return respond(await mySkills(s))
  }
  return respond('{"code":"not_found","message":"Not found"}', 404)
}

const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  idleTimeout: 0,
  fetch: handle,
})

console.log(`service-server pg-floor floor listening on http://${server.hostname}:${server.port}`)
