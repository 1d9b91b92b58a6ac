/**
 * What reaches a member or a Worker: the delivered set, as resolved files with a digest.
 *
 * A member receives the active skills `/v1/me/skills` lists (a grant on the skill, or a skill hub
 * assigned to them, one of their teams or the organization) plus every active object of the
 * active plugins assigned to them the same ways. A Worker receives what its own delivery names
 * (hubs, plugins, model providers; see `worker-delivery.ts`), nothing through people.
 *
 * One query per way in (grants, hubs, plugins, then the objects' latest versions in batches), so
 * the cost follows the size of the set, not the number of paths; each item says every way it
 * arrives (`reasons`). The set is bounded ({@link DELIVERY_LIMITS}) so one answer stays in memory.
 * @module
 */
import { sha256Hex } from '../../core/sha256.ts'
import { forEachPrincipal } from '../catalog/visibility-sql.ts'
import type { ObjectType } from '../catalog/config-source.ts'
import { renderForm, type ResolvedFile } from '../catalog/resolved-form.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import type { Deps } from '../deps.ts'
import type { Db } from '../schema.ts'
import { workerProviders } from './worker-delivery.ts'

/** Who the set is for. */
export type DeliveryPrincipal =
  | { kind: 'member'; orgId: string; orgName: string; userId: string; memberId: string }
  | { kind: 'worker'; orgId: string; orgName: string; workerId: string; workerName: string }

/** Why an item arrives. */
export interface DeliveryReason {
  via: 'hub' | 'plugin' | 'grant' | 'worker'
  /** The hub, plugin, grant or Worker. */
  id: string
  /** The hub's or plugin's name; a grant's role (`viewer grant`); the Worker's name. */
  name: string
  scope: 'member' | 'team' | 'organization' | 'worker'
  /** The team the path goes through, when `scope` is `team`. */
  team?: { id: string; name: string }
}

/** One file of an item, relative to the item's home (see {@link ITEM_HOMES}). */
export interface DeliveredFile {
  path: string
  encoding: 'utf8' | 'base64'
  content: string
  executable: boolean
  size: number
  sha256: string
}

/** One delivered item. */
export interface DeliveredItem {
  objectId: string
  type: ObjectType | 'llm_provider'
  name: string
  versionId: string
  digest: string
  reasons: DeliveryReason[]
  files: DeliveredFile[]
  config?: Record<string, unknown>
}

/** The answer of `GET /v1/me/delivery`. */
export interface DeliverySet {
  principal: { kind: 'member'; userId: string; memberId: string } | { kind: 'worker'; workerId: string }
  organization: { id: string; name: string }
  digest: string
  items: DeliveredItem[]
}

/** Where each type's files live in a project; file paths of an item are relative to it. */
export const ITEM_HOMES: Record<ObjectType, (name: string) => string> = {
  skill: (name) => `.opencode/skills/${name}/`,
  command: () => '.opencode/commands/',
  agent: () => '.opencode/agents/',
  tool: () => '.opencode/tools/',
  hook: () => '.opencode/plugins/',
  context: () => '.opencode/context/',
  mcp: () => '',
  custom: () => '',
}

/** Bounds of one set: beyond them the answer is 413 `delivery_too_large` rather than a partial set. */
export const DELIVERY_LIMITS = { maxItems: 5_000, maxBytes: 256 * 1024 * 1024 }

/** Ids per `IN (…)` when reading versions: well under both engines' parameter limits. */
const BATCH = 500

type Scope = DeliveryReason['scope']
type PathRow = {
  object_id: string
  id: string
  name: string
  member_id: string | null
  team_id: string | null
  org_wide: number
  team_name: string | null
}

function scopeOf(row: { member_id: string | null; team_id: string | null }): Scope {
  return row.member_id ? 'member' : row.team_id ? 'team' : 'organization'
}

function reasonOf(via: 'hub' | 'plugin' | 'grant', row: PathRow): DeliveryReason {
  const scope = scopeOf(row)
  const reason: DeliveryReason = { via, id: row.id, name: row.name, scope }
  if (scope === 'team') reason.team = { id: row.team_id!, name: row.team_name ?? '' }
  return reason
}

/** Skills granted to the member directly, through a team or org-wide. */
function grantPaths(db: Db, orgId: string, memberId: string) {
  return forEachPrincipal(db, { memberId }, 'g', () =>
    db
      .selectFrom('access_grant as g')
      .innerJoin('config_object as co', 'co.id', 'g.resource_id')
      .leftJoin('team as t', 't.id', 'g.team_id')
      .select(['g.resource_id as object_id', 'g.id', 'g.role as name', 'g.member_id', 'g.team_id', 'g.org_wide'])
      .select('t.name as team_name')
      .where('g.org_id', '=', orgId)
      .where('g.resource_type', '=', 'config_object')
      .where('co.object_type', '=', 'skill')
      .where('co.status', '=', 'active'),
  ).execute() as Promise<PathRow[]>
}

/** Skills of hubs assigned to the member, a team of theirs or the organization. */
function hubPaths(db: Db, orgId: string, memberId: string) {
  return forEachPrincipal(db, { memberId }, 'a', () =>
    db
      .selectFrom('skill_hub_assignment as a')
      .innerJoin('skill_hub as h', 'h.id', 'a.hub_id')
      .innerJoin('skill_hub_skill as shs', 'shs.hub_id', 'a.hub_id')
      .innerJoin('config_object as co', 'co.id', 'shs.config_object_id')
      .leftJoin('team as t', 't.id', 'a.team_id')
      .select(['shs.config_object_id as object_id', 'h.id', 'h.name', 'a.member_id', 'a.team_id', 'a.org_wide'])
      .select('t.name as team_name')
      .where('a.org_id', '=', orgId)
      .where('co.object_type', '=', 'skill')
      .where('co.status', '=', 'active'),
  ).execute() as Promise<PathRow[]>
}

/** Objects of active plugins assigned to the member, a team of theirs or the organization. */
function pluginPaths(db: Db, orgId: string, memberId: string) {
  // Plugin assignments have the columns `forEachPrincipal` expects of a branch table named `a`.
  return forEachPrincipal(db, { memberId }, 'a', () =>
    db
      .selectFrom('plugin_assignment as a')
      .innerJoin('plugin as p', 'p.id', 'a.plugin_id')
      .innerJoin('plugin_config_object as pco', 'pco.plugin_id', 'a.plugin_id')
      .innerJoin('config_object as co', 'co.id', 'pco.config_object_id')
      .leftJoin('team as t', 't.id', 'a.team_id')
      .select(['pco.config_object_id as object_id', 'p.id', 'p.name', 'a.member_id', 'a.team_id', 'a.org_wide'])
      .select('t.name as team_name')
      .where('a.org_id', '=', orgId)
      .where('p.status', '=', 'active')
      .where('co.status', '=', 'active')
      .where('co.object_type', '!=', 'custom'),
  ).execute() as Promise<PathRow[]>
}

/** Paths of a Worker's hubs and plugins, each reason scoped to the Worker. */
async function workerPaths(db: Db, orgId: string, workerId: string) {
  const hubs = await db
    .selectFrom('worker_delivery as d')
    .innerJoin('skill_hub as h', 'h.id', 'd.target_id')
    .innerJoin('skill_hub_skill as shs', 'shs.hub_id', 'h.id')
    .innerJoin('config_object as co', 'co.id', 'shs.config_object_id')
    .select(['shs.config_object_id as object_id', 'h.id', 'h.name'])
    .where('d.worker_id', '=', workerId)
    .where('d.kind', '=', 'hub')
    .where('h.org_id', '=', orgId)
    .where('co.object_type', '=', 'skill')
    .where('co.status', '=', 'active')
    .execute()
  const plugins = await db
    .selectFrom('worker_delivery as d')
    .innerJoin('plugin as p', 'p.id', 'd.target_id')
    .innerJoin('plugin_config_object as pco', 'pco.plugin_id', 'p.id')
    .innerJoin('config_object as co', 'co.id', 'pco.config_object_id')
    .select(['pco.config_object_id as object_id', 'p.id', 'p.name'])
    .where('d.worker_id', '=', workerId)
    .where('d.kind', '=', 'plugin')
    .where('p.org_id', '=', orgId)
    .where('p.status', '=', 'active')
    .where('co.status', '=', 'active')
    .where('co.object_type', '!=', 'custom')
    .execute()
  return [
    ...hubs.map((r) => ({ objectId: r.object_id, reason: { via: 'hub', id: r.id, name: r.name, scope: 'worker' } })),
    ...plugins.map((r) => ({
      objectId: r.object_id,
      reason: { via: 'plugin', id: r.id, name: r.name, scope: 'worker' },
    })),
  ] as Array<{ objectId: string; reason: DeliveryReason }>
}

/** The files of a rendered version, relative to the item's home, with their sizes. */
function deliveredFiles(type: ObjectType, name: string, files: ResolvedFile[]): DeliveredFile[] {
  const home = ITEM_HOMES[type](name)
  return files.map((f) => ({
    path: f.path.startsWith(home) ? f.path.slice(home.length) : f.path,
    encoding: f.encoding,
    content: f.content,
    executable: f.executable,
    size: f.encoding === 'base64' ? Buffer.from(f.content, 'base64').byteLength : Buffer.byteLength(f.content),
    sha256: f.sha256,
  }))
}

/** The digest of an item's content: its files (path, hash, mode) and its configuration. */
export function itemDigest(item: Pick<DeliveredItem, 'type' | 'name' | 'files' | 'config'>): string {
  const files = item.files.map((f) => [f.path, f.sha256, f.executable])
  return sha256Hex(JSON.stringify([item.type, item.name, files, item.config ?? null]))
}

/** The digest of a set: over each item's (objectId, versionId, digest), sorted by objectId. */
export function setDigest(items: ReadonlyArray<Pick<DeliveredItem, 'objectId' | 'versionId' | 'digest'>>): string {
  const lines = items.map((i) => `${i.objectId}\t${i.versionId}\t${i.digest}\n`).sort()
  return sha256Hex(lines.join(''))
}

const tooLarge = (what: string) =>
  controlPlaneError(
    'delivery_too_large',
    `The delivered set is too large (${what}); split it across fewer hubs or plugins`,
    {
      details: { ...DELIVERY_LIMITS },
    },
  )

/** Renders the latest version of each object, in batches, bounded by {@link DELIVERY_LIMITS}. */
async function renderObjects(db: Db, orgId: string, ids: string[]): Promise<DeliveredItem[]> {
  if (ids.length > DELIVERY_LIMITS.maxItems) throw tooLarge(`${ids.length} items`)
  const items: DeliveredItem[] = []
  let bytes = 0
  for (let i = 0; i < ids.length; i += BATCH) {
    const rows = await db
      .selectFrom('config_object as co')
      .innerJoin('config_object_version as v', 'v.id', 'co.latest_version_id')
      .select(['co.id', 'co.object_type', 'co.name', 'v.id as version_id', 'v.normalized_payload'])
      .select(['v.raw_source_text', 'v.files'])
      .where('co.org_id', '=', orgId)
      .where('co.id', 'in', ids.slice(i, i + BATCH))
      .execute()
    for (const row of rows) {
      const type = row.object_type as ObjectType
      const payload = JSON.parse(row.normalized_payload) as Record<string, unknown>
      const form = await renderForm(type, payload, row.raw_source_text, row.files ?? null)
      const files = deliveredFiles(type, row.name, form.files)
      bytes += files.reduce((n, f) => n + f.size, 0)
      if (bytes > DELIVERY_LIMITS.maxBytes) throw tooLarge('over the byte limit')
      const item: DeliveredItem = {
        objectId: row.id,
        type,
        name: row.name,
        versionId: row.version_id,
        digest: '',
        reasons: [],
        files,
      }
      if (form.config) item.config = form.config
      item.digest = itemDigest(item)
      items.push(item)
    }
  }
  return items
}

/**
 * The delivered set of a member or a Worker. Items are sorted by type then name; when two
 * objects of one type share a name (they would land on the same path), the one with the lower id
 * is delivered and the other left out.
 */
export async function deliveredSet(deps: Deps, principal: DeliveryPrincipal): Promise<DeliverySet> {
  const db = deps.db
  const reasons = new Map<string, DeliveryReason[]>()
  const add = (objectId: string, reason: DeliveryReason) => {
    const list = reasons.get(objectId)
    if (list) {
      if (!list.some((r) => r.via === reason.via && r.id === reason.id && r.scope === reason.scope)) list.push(reason)
    } else reasons.set(objectId, [reason])
  }
  if (principal.kind === 'member') {
    const [grants, hubs, plugins] = [
      await grantPaths(db, principal.orgId, principal.memberId),
      await hubPaths(db, principal.orgId, principal.memberId),
      await pluginPaths(db, principal.orgId, principal.memberId),
    ]
    for (const row of grants) add(row.object_id, reasonOf('grant', { ...row, name: `${row.name} grant` }))
    for (const row of hubs) add(row.object_id, reasonOf('hub', row))
    for (const row of plugins) add(row.object_id, reasonOf('plugin', row))
  } else {
    for (const path of await workerPaths(db, principal.orgId, principal.workerId)) add(path.objectId, path.reason)
  }
  const rendered = await renderObjects(db, principal.orgId, [...reasons.keys()].sort())
  rendered.sort((a, b) => (a.objectId < b.objectId ? -1 : a.objectId > b.objectId ? 1 : 0))
  const seen = new Set<string>()
  const items: DeliveredItem[] = []
  for (const item of rendered) {
    const key = `${item.type}\0${item.name}`
    if (seen.has(key)) continue
    seen.add(key)
    item.reasons = reasons.get(item.objectId) ?? []
    items.push(item)
  }
  if (principal.kind === 'worker') {
    for (const provider of await workerProviders(deps, principal.orgId, principal.workerId)) {
      const item: DeliveredItem = {
        objectId: provider.id,
        type: 'llm_provider',
        name: provider.name,
        versionId: provider.updatedAt,
        digest: '',
        reasons: [{ via: 'worker', id: principal.workerId, name: principal.workerName, scope: 'worker' }],
        files: [],
        config: provider.config,
      }
      item.digest = itemDigest(item)
      items.push(item)
    }
  }
  items.sort((a, b) =>
    a.type === b.type ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.type < b.type ? -1 : 1,
  )
  return {
    principal:
      principal.kind === 'member'
        ? { kind: 'member', userId: principal.userId, memberId: principal.memberId }
        : { kind: 'worker', workerId: principal.workerId },
    organization: { id: principal.orgId, name: principal.orgName },
    digest: setDigest(items),
    items,
  }
}
