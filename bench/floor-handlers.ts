/**
 * The stack floor of the control plane: the same work as our routes, written directly on
 * bun:sqlite prepared statements with no framework, for the `control-plane-floor` case and
 * `bench/profile-request.ts`.
 *
 * Each handler does what the product must do for the request and nothing else: the session
 * lookup (SHA-256 of the bearer token, the same join of session, user, membership and
 * organization, the expiry check, the permission check), the same keyset page (`limit + 1`
 * rows in id order, the same columns, an opaque cursor), the same response body with the
 * contract's headers (content type, a request id, nosniff). A create does the same inserts in one
 * transaction: the object, its first version, its search terms, the creator's grant, the audit
 * row and the change-feed row. No validation library, no query builder, no router.
 *
 * Why a floor and not the raw Bun.serve baseline: the baseline does no database work, so a
 * ratio to it mixes our overhead with SQLite's cost; this floor pays SQLite's cost too, so
 * ours ÷ floor is the share of the stack's speed our own layers keep.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { searchTerms } from '../src/control-plane/catalog/search-terms.ts'
import { permissionsOf, type Role } from '../src/control-plane/policy.ts'

const JSON_HEADERS = 'application/json; charset=utf-8'
const ROLES_THAT_ADMINISTER = new Set(['owner', 'admin'])

const SESSION_SQL = `select s.id as session_id, s.active_org_id, s.expires_at, s.refreshed_at, u.id, u.email, u.name,
u.created_at, m.id as member_id, m.role, o.id as org_id, o.name as org_name
from user_session s inner join app_user u on u.id = s.user_id
left join member m on m.user_id = s.user_id and m.org_id = coalesce(?, s.active_org_id)
left join organization o on o.id = m.org_id where s.token_hash = ?`

const OBJECT_COLUMNS = `co.id, co.object_type, co.source_mode, co.title, co.description, co.name, co.status,
co.connector_instance_id, co.created_by_member_id, co.version_count, co.created_at, co.updated_at, co.archived_at,
co.deleted_at, co.latest_version_id, co.latest_created_via, co.latest_created_by_member_id,
co.latest_source_revision_ref, co.latest_created_at`

const OBJECT_PAGE_SQL = `select ${OBJECT_COLUMNS} from config_object co
where co.org_id = ? and co.object_type = ? and co.status != 'deleted' order by co.id asc limit ?`

const MEMBER_PAGE_SQL = `select m.id, m.user_id, m.role, m.created_at, m.updated_at, u.email, u.name
from member m inner join app_user u on u.id = m.user_id where m.org_id = ? order by m.id asc limit ?`

const GRANTED = (n: number) =>
  `select g.resource_id from access_grant g where g.org_id = ?${n} and g.resource_type = 'config_object'`
const ASSIGNED = `select a.hub_id from skill_hub_assignment a where a.org_id = ?1`
const RECEIVED_IDS = `${GRANTED(1)} and g.member_id = ?2
union all ${GRANTED(1)} and g.team_id in (select tm.team_id from team_member tm where tm.member_id = ?2)
union all ${GRANTED(1)} and g.org_wide = 1
union all select shs.config_object_id from skill_hub_skill shs where shs.org_id = ?1 and shs.hub_id in (
${ASSIGNED} and a.member_id = ?2
union all ${ASSIGNED} and a.team_id in (select tm.team_id from team_member tm where tm.member_id = ?2)
union all ${ASSIGNED} and a.org_wide = 1)`

const REACH_SQL = `select count(*) as n from (${RECEIVED_IDS} limit ?3) reach`
const SKILL_PAGE_SQL = `select co.id, co.name, co.title, co.status, co.created_at, co.updated_at, v.id as version_id,
v.number as version_number, v.normalized_payload, v.files
from config_object co inner join config_object_version v on v.id = co.latest_version_id
where co.org_id = ?1 and co.object_type = 'skill' and co.status = 'active' and co.id in (${RECEIVED_IDS})
order by co.id asc limit ?3`

/** Bun.serve-style handlers over one SQLite file. */
export interface FloorHandlers {
  fetch(request: Request): Response | Promise<Response>
  close(): void
}

let counter = 101_559_956_668_416
const prefix = `req_${randomBytes(8).toString('hex')}`

/** A JSON response with the contract's headers (content type, a fresh request id, nosniff). */
export function respond(body: string, status = 200): Response {
  const headers = {
    'content-type': JSON_HEADERS,
    'x-request-id': prefix + (++counter).toString(36),
    'x-content-type-options': 'nosniff',
  }
  return status === 200 ? new Response(body, { headers }) : new Response(body, { status, headers })
}

/** An opaque cursor in the product's encoding. */
export function cursorOf(scope: string, id: string): string {
  return Buffer.from(JSON.stringify({ s: scope, k: [id], f: 'floor-fingerprint' }), 'utf8').toString('base64url')
}

const permissions = new Map<string, string[]>()

/** A config-object row in the product's wire shape. */
export const objectView = (row: any) => ({
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
  deletedAt: row.deleted_at,
})

/** A keyset page's body: `limit` items and the cursor after the last when there are more. */
export const page = <T>(rows: any[], limit: number, scope: string, map: (row: any) => T) => {
  const more = rows.length > limit
  const items = (more ? rows.slice(0, limit) : rows).map(map)
  return JSON.stringify({ items, nextCursor: more ? cursorOf(scope, rows[limit - 1].id) : null })
}

/** A member row (with its user's email and name) in the product's wire shape. */
export const memberView = (r: any) => ({
  id: r.id,
  userId: r.user_id,
  email: r.email,
  name: r.name,
  role: r.role,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
})

/** `GET /v1/me`'s body for a session row. */
export const me = (s: any) => {
  let perms = permissions.get(s.role)
  if (!perms) permissions.set(s.role, (perms = permissionsOf(s.role as Role, 'session')))
  return JSON.stringify({
    user: { id: s.id, email: s.email, name: s.name, createdAt: s.created_at },
    credential: { kind: 'session', sessionId: s.session_id, expiresAt: s.expires_at },
    organization: { id: s.org_id, name: s.org_name },
    member: { id: s.member_id, role: s.role, permissions: perms },
  })
}

/** Opens the floor on the database file the product also serves. */
export async function floorHandlers(path: string): Promise<FloorHandlers> {
  const { Database } = await import('bun:sqlite' as string)
  const db = new Database(path, { strict: true })
  db.run('pragma busy_timeout = 5000')
  db.run('pragma foreign_keys = on')
  const session = db.prepare(SESSION_SQL)
  const objectPage = db.prepare(OBJECT_PAGE_SQL)
  const memberPage = db.prepare(MEMBER_PAGE_SQL)
  const reach = db.prepare(REACH_SQL)
  const skillPage = db.prepare(SKILL_PAGE_SQL)

  const authenticate = (request: Request) => {
    const header = request.headers.get('authorization') ?? ''
    const token = header.startsWith('Bearer ') ? header.slice(7) : ''
    const row = session.get(null, createHash('sha256').update(token).digest('hex')) as any
    if (!row || Date.parse(row.expires_at) <= Date.now() || !row.member_id) return null
    return row
  }
  const unauthorized = () => respond('{"code":"unauthorized","message":"Invalid or expired session"}', 401)

  const limitOf = (url: URL) => Number(url.searchParams.get('limit') ?? 50)

  const mySkills = (s: any, limit: number) => {
    reach.get(s.org_id, s.member_id, 8 * (limit + 1))
    const rows = skillPage.all(s.org_id, s.member_id, limit + 1) as any[]
    const shown = rows.slice(0, limit)
    const ids = shown.map((r) => r.id)
    const marks = ids.map(() => '?').join(', ')
    const grants = ids.length
      ? (db
          .query(
            `select resource_id, member_id, team_id, org_wide from access_grant where resource_type = 'config_object' and resource_id in (${marks}) and (member_id = ? or team_id in (select team_id from team_member where member_id = ?) or org_wide = 1) order by id`,
          )
          .all(...ids, s.member_id, s.member_id) as any[])
      : []
    const hubs = ids.length
      ? (db
          .query(
            `select shs.config_object_id, h.id as hub_id, h.name as hub_name, a.member_id, a.team_id, a.org_wide from skill_hub_skill shs inner join skill_hub h on h.id = shs.hub_id inner join skill_hub_assignment a on a.hub_id = h.id where shs.config_object_id in (${marks}) and (a.member_id = ? or a.team_id in (select team_id from team_member where member_id = ?) or a.org_wide = 1) order by a.id`,
          )
          .all(...ids, s.member_id, s.member_id) as any[])
      : []
    const byGrant = new Map<string, any[]>()
    for (const g of grants) byGrant.set(g.resource_id, [...(byGrant.get(g.resource_id) ?? []), g])
    const who = (r: any) => (r.member_id ? 'member' : r.team_id ? 'team' : 'organization')
    return page(rows, limit, 'my-skills', (row) => ({
      skill: {
        id: row.id,
        name: row.name,
        description: (JSON.parse(row.normalized_payload) as { description?: string }).description ?? '',
        title: row.title,
        status: row.status,
        versionId: row.version_id,
        versionNumber: row.version_number,
        files: row.files ? JSON.parse(row.files).map((f: any) => ({ path: f.path })) : [],
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      },
      paths: [
        ...(byGrant.get(row.id) ?? []).map((g) => ({
          via: 'grant',
          hubId: null,
          hubName: null,
          principal: who(g),
          teamId: g.team_id,
        })),
        ...hubs
          .filter((h) => h.config_object_id === row.id)
          .map((h) => ({ via: 'hub', hubId: h.hub_id, hubName: h.hub_name, principal: who(h), teamId: h.team_id })),
      ],
    }))
  }

  const insertObject = db.prepare(
    `insert into config_object (id, org_id, object_type, source_mode, title, description, name, status,
connector_instance_id, created_by_member_id, latest_version_id, version_count, latest_created_via,
latest_created_by_member_id, latest_source_revision_ref, latest_created_at, created_at, updated_at, archived_at, deleted_at)
values (?, ?, ?, ?, ?, ?, ?, 'active', null, ?, ?, 1, ?, ?, null, ?, ?, ?, null, null)`,
  )
  const insertVersion = db.prepare(
    `insert into config_object_version (id, org_id, config_object_id, number, raw_source_text, normalized_payload,
files, content_hash, created_via, created_by_member_id, connector_sync_event_id, source_revision_ref, created_at)
values (?, ?, ?, 1, ?, ?, null, null, ?, ?, null, null, ?)`,
  )
  const insertTerm = db.prepare('insert into config_object_term (org_id, term, config_object_id) values (?, ?, ?)')
  const insertGrant = db.prepare(
    `insert into access_grant (id, org_id, resource_type, resource_id, member_id, team_id, org_wide, principal_key, role,
created_by_member_id, created_at, updated_at) values (?, ?, 'config_object', ?, ?, null, 0, ?, 'manager', ?, ?, ?)`,
  )
  const insertAudit = db.prepare(
    `insert into audit_event (id, org_id, action, actor_user_id, actor_member_id, credential_kind, api_key_id,
target_type, target_id, data, created_at) values (?, ?, 'config_object.created', ?, ?, 'session', null, 'config_object', ?, ?, ?)`,
  )
  const lastSeq = db.prepare('select max(seq) as seq from change_event where org_id = ?')
  const insertChange = db.prepare(
    `insert into change_event (org_id, seq, kind, subject_type, subject_id, data, created_at)
values (?, ?, 'config_object.created', 'config_object', ?, ?, ?)`,
  )
  // Who sees the change (the creator, through their grant), stored with it as the product does.
  const insertAudience = db.prepare(`insert into change_audience (org_id, seq, principal, hint) values (?, ?, ?, 0)`)
  const readObject = db.prepare(`select ${OBJECT_COLUMNS} from config_object co where co.org_id = ? and co.id = ?`)
  const id = (kind: string) => `${kind}_floor${randomBytes(10).toString('hex').slice(0, 21)}`
  const create = db.transaction((s: any, body: any) => {
    const now = new Date().toISOString()
    const objectId = id('cob')
    const versionId = id('cov')
    const name = String(body.title)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
    insertObject.run(
      objectId,
      s.org_id,
      body.type,
      body.sourceMode,
      body.title,
      body.description ?? null,
      name,
      s.member_id,
      versionId,
      body.sourceMode,
      s.member_id,
      now,
      now,
      now,
    )
    const payload = JSON.stringify({ name, description: body.description ?? '', body: body.input?.rawSourceText ?? '' })
    insertVersion.run(
      versionId,
      s.org_id,
      objectId,
      body.input?.rawSourceText ?? null,
      payload,
      body.sourceMode,
      s.member_id,
      now,
    )
    for (const term of searchTerms(`${body.title} ${body.description ?? ''} ${body.input?.rawSourceText ?? ''}`))
      insertTerm.run(s.org_id, term, objectId)
    insertGrant.run(id('agr'), s.org_id, objectId, s.member_id, `member:${s.member_id}`, s.member_id, now, now)
    const data = JSON.stringify({ objectType: body.type, versionId })
    insertAudit.run(id('aev'), s.org_id, s.id, s.member_id, objectId, data, now)
    const seq = Number((lastSeq.get(s.org_id) as any)?.seq ?? 0) + 1
    insertChange.run(s.org_id, seq, objectId, data, now)
    insertAudience.run(s.org_id, seq, `member:${s.member_id}`)
    return readObject.get(s.org_id, objectId)
  })

  const fetch = (request: Request): Response | Promise<Response> => {
    const url = new URL(request.url)
    const s = authenticate(request)
    if (!s) return unauthorized()
    switch (url.pathname) {
      case '/v1/me':
        return respond(me(s))
      case '/v1/config-objects':
        if (request.method === 'POST') {
          if (!ROLES_THAT_ADMINISTER.has(s.role) && s.role !== 'member') return unauthorized()
          return request
            .json()
            .then((body) => respond(JSON.stringify({ item: objectView(create.immediate(s, body)) }), 201))
        }
        return respond(
          page(
            objectPage.all(s.org_id, url.searchParams.get('type') ?? 'skill', limitOf(url) + 1) as any[],
            limitOf(url),
            'config-objects',
            objectView,
          ),
        )
      case '/v1/members':
        if (!ROLES_THAT_ADMINISTER.has(s.role) && s.role !== 'member') return unauthorized()
        return respond(page(memberPage.all(s.org_id, limitOf(url) + 1) as any[], limitOf(url), 'members', memberView))
      case '/v1/me/skills':
        return respond(mySkills(s, limitOf(url)))
    }
    return respond('{"code":"not_found","message":"Not found"}', 404)
  }
  return { fetch, close: () => db.close() }
}
