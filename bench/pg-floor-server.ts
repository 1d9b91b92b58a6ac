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
import { createHash } from 'node:crypto'
import { cursorOf, me, memberView, objectView, page, respond } from './floor-handlers.ts'
import { FLOOR_SQL, floorOperations, pgDriver } from './lib/pg-bench.ts'

const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const driver = pgDriver(flag('database-url', ''), 10, { named: true })
const query = async (text: string, params: unknown[]) => ((await driver.query(text, params)) as { rows: any[] }).rows
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
  const ops = floorOperations(driver, { tokenHash: '', orgId: s.org_id, memberId: s.member_id, userId: s.id })
  const id = await ops.create(body.title, String(body.input?.rawSourceText ?? ''))
  const [row] = await query(`${FLOOR_SQL.page.split(' from ')[0]} from config_object where id = $1`, [id])
  return JSON.stringify({ item: objectView({ ...row, deleted_at: null }) })
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
      return respond(
        page(await query(FLOOR_SQL.page, [s.org_id, 'skill', 'active', '']), 50, 'config-objects', objectView),
      )
    case '/v1/members':
      return respond(page(await query(FLOOR_SQL.members, [s.org_id, '']), 50, 'members', memberView))
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
