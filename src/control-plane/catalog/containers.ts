/**
 * Plugins and marketplaces share one shape (a named container with a status and grants), so
 * their CRUD and lifecycle are written once here, parameterized by kind. Plugins contain config
 * objects; marketplaces list plugins. Deleting either removes its memberships and grants (the
 * contained objects and plugins stay); archiving keeps everything and can be undone.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor, type AuditAction } from '../admin/audit.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { dropGrants, requireRole, grantCreator } from './access-grants.ts'
import { visibleCondition } from './visibility-sql.ts'
import type { Db } from '../schema.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Which container. */
export type ContainerKind = 'plugin' | 'marketplace'
/** Container states. */
export const CONTAINER_STATES = ['active', 'archived'] as const
/** A container state. */
export type ContainerState = (typeof CONTAINER_STATES)[number]

/** A plugin or marketplace as the API shows it. */
export interface ContainerView {
  id: string
  name: string
  description: string | null
  status: ContainerState
  createdByMemberId: string | null
  /** Config objects in a plugin, or plugins in a marketplace. */
  memberCount: number
  createdAt: string
  updatedAt: string
  archivedAt: string | null
}

const PREFIX: Record<ContainerKind, string> = { plugin: 'plg', marketplace: 'mkt' }

function baseQuery(db: Db, kind: ContainerKind, orgId: string) {
  return db
    .selectFrom(`${kind} as c` as 'plugin as c')
    .select([
      'c.id',
      'c.name',
      'c.description',
      'c.status',
      'c.created_by_member_id',
      'c.created_at',
      'c.updated_at',
      'c.archived_at',
    ])
    .select((eb) =>
      (kind === 'plugin'
        ? eb
            .selectFrom('plugin_config_object as m')
            .select((e) => e.fn.countAll<number>().as('n'))
            .whereRef('m.plugin_id', '=', 'c.id')
        : eb
            .selectFrom('marketplace_plugin as m')
            .select((e) => e.fn.countAll<number>().as('n'))
            .whereRef('m.marketplace_id', '=', 'c.id')
      ).as('member_count'),
    )
    .where('c.org_id', '=', orgId)
}

type Row = Awaited<ReturnType<ReturnType<typeof baseQuery>['executeTakeFirstOrThrow']>>

function view(row: Row): ContainerView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    status: row.status as ContainerState,
    createdByMemberId: row.created_by_member_id,
    memberCount: Number(row.member_count ?? 0),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    archivedAt: row.archived_at,
  }
}

/** Visible containers in creation order, optionally by status. */
export function listContainers(
  deps: Deps,
  actor: Actor,
  kind: ContainerKind,
  page: { cursor?: string; limit: number; status?: ContainerState },
): Promise<Page<ContainerView>> {
  let query = baseQuery(deps.db, kind, actor.orgId).where(visibleCondition(deps.db, actor, kind, 'c.id'))
  if (page.status) query = query.where('c.status', '=', page.status)
  return keysetPage(query, {
    scope: `${kind}s`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'c.id', field: 'id', direction: 'asc' }],
    map: view,
  })
}

/** One visible container. */
export async function getContainer(deps: Deps, actor: Actor, kind: ContainerKind, id: string): Promise<ContainerView> {
  await requireRole(deps.db, actor, kind, id, 'viewer')
  return view(await baseQuery(deps.db, kind, actor.orgId).where('c.id', '=', id).executeTakeFirstOrThrow())
}

/** Creates a container; the creator gets a manager grant. */
export async function createContainer(
  deps: Deps,
  actor: Actor,
  kind: ContainerKind,
  input: { name: string; description?: string | null },
): Promise<ContainerView> {
  const id = newId(PREFIX[kind])
  const now = isoAt(deps)
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .insertInto(kind)
      .values({
        id,
        org_id: actor.orgId,
        name: input.name,
        description: input.description ?? null,
        status: 'active',
        created_by_member_id: actor.memberId,
        created_at: now,
        updated_at: now,
        archived_at: null,
      })
      .execute()
    await grantCreator(deps, trx, actor, kind, id)
    await recordAudit(deps, trx, actor, `${kind}.created` as AuditAction, { type: kind, id })
  })
  return getContainer(deps, actor, kind, id)
}

/** Renames or re-describes a container (editor). */
export async function updateContainer(
  deps: Deps,
  actor: Actor,
  kind: ContainerKind,
  id: string,
  input: { name?: string; description?: string | null },
): Promise<ContainerView> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, kind, id, 'editor')
    const changes: { name?: string; description?: string | null; updated_at: string } = { updated_at: isoAt(deps) }
    if (input.name !== undefined) changes.name = input.name
    if (input.description !== undefined) changes.description = input.description
    await trx.updateTable(kind).set(changes).where('id', '=', id).execute()
    await recordAudit(
      deps,
      trx,
      actor,
      `${kind}.updated` as AuditAction,
      { type: kind, id },
      { fields: Object.keys(input).sort().join(',') },
    )
  })
  return getContainer(deps, actor, kind, id)
}

/** Archives (active → archived) or restores (archived → active) a container (manager); other moves 409. */
export async function moveContainer(
  deps: Deps,
  actor: Actor,
  kind: ContainerKind,
  id: string,
  action: 'archive' | 'restore',
): Promise<ContainerView> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, kind, id, 'manager')
    const row = await trx.selectFrom(kind).select('status').where('id', '=', id).executeTakeFirstOrThrow()
    const from: ContainerState = action === 'archive' ? 'active' : 'archived'
    if (row.status !== from)
      throw controlPlaneError('invalid_lifecycle_transition', `Cannot ${action} a ${kind} that is ${row.status}`, {
        details: {
          status: row.status,
          action,
          allowedFrom: [from],
        },
      })
    const now = isoAt(deps)
    await trx
      .updateTable(kind)
      .set({
        status: action === 'archive' ? 'archived' : 'active',
        archived_at: action === 'archive' ? now : null,
        updated_at: now,
      })
      .where('id', '=', id)
      .execute()
    await recordAudit(deps, trx, actor, `${kind}.${action === 'archive' ? 'archived' : 'restored'}` as AuditAction, {
      type: kind,
      id,
    })
  })
  return getContainer(deps, actor, kind, id)
}

/** Deletes a container with its memberships and grants (manager). */
export async function deleteContainer(deps: Deps, actor: Actor, kind: ContainerKind, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, kind, id, 'manager')
    // Recorded before the delete, so the delivery event can still name who received the plugin.
    await recordAudit(deps, trx, actor, `${kind}.deleted` as AuditAction, { type: kind, id })
    await dropGrants(trx, kind, id)
    await trx.deleteFrom(kind).where('id', '=', id).execute()
  })
}
