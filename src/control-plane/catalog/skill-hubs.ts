/**
 * Skill hubs: reusable collections of skills (spec §4B rule 5), assigned to members, teams or
 * the organization. An assignment delivers the hub's skills (and lets the assignees see them);
 * access grants decide who may see and change the hub itself.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import {
  dropGrants,
  principalKey,
  requirePrincipal,
  requireRole,
  grantCreator,
  type GrantPrincipal,
} from './access-grants.ts'
import { isOrgAdmin } from './grant-roles.ts'
import { visibleCondition } from './visibility-sql.ts'
import type { Db } from '../schema.ts'
import { resolveObjectIn, type ResolvedView } from './config-versions.ts'
import { skillQuery, skillView, type SkillView } from './skills.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A hub as the API shows it. */
export interface SkillHubView {
  id: string
  name: string
  description: string | null
  skillCount: number
  createdByMemberId: string | null
  createdAt: string
  updatedAt: string
}

/** An assignment as the API shows it. */
export interface AssignmentView {
  id: string
  hubId: string
  memberId: string | null
  teamId: string | null
  orgWide: boolean
  createdByMemberId: string | null
  createdAt: string
}

function hubQuery(db: Db, orgId: string) {
  return db
    .selectFrom('skill_hub as h')
    .select(['h.id', 'h.name', 'h.description', 'h.created_by_member_id', 'h.created_at', 'h.updated_at'])
    .select((eb) =>
      eb
        .selectFrom('skill_hub_skill as s')
        .select((e) => e.fn.countAll<number>().as('n'))
        .whereRef('s.hub_id', '=', 'h.id')
        .as('skill_count'),
    )
    .where('h.org_id', '=', orgId)
}

type HubRow = Awaited<ReturnType<ReturnType<typeof hubQuery>['executeTakeFirstOrThrow']>>

function hubView(row: HubRow): SkillHubView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    skillCount: Number(row.skill_count ?? 0),
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

const hubExists = () => controlPlaneError('skill_hub_exists', 'A skill hub with that name already exists')

/** Visible hubs in creation order. */
export function listHubs(
  deps: Deps,
  actor: Actor,
  page: { cursor?: string; limit: number },
): Promise<Page<SkillHubView>> {
  const query = hubQuery(deps.db, actor.orgId).where(visibleCondition(deps.db, actor, 'skill_hub', 'h.id'))
  return keysetPage(query, {
    scope: 'skill-hubs',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'h.id', field: 'id', direction: 'asc' }],
    map: hubView,
  })
}

/** One visible hub. */
export async function getHub(deps: Deps, actor: Actor, hubId: string): Promise<SkillHubView> {
  await requireRole(deps.db, actor, 'skill_hub', hubId, 'viewer')
  return hubView(await hubQuery(deps.db, actor.orgId).where('h.id', '=', hubId).executeTakeFirstOrThrow())
}

/** Creates a hub (names unique per organization); the creator gets a manager grant. */
export async function createHub(
  deps: Deps,
  actor: Actor,
  input: { name: string; description?: string | null },
): Promise<SkillHubView> {
  const id = newId('shub')
  const now = isoAt(deps)
  try {
    await deps.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('skill_hub')
        .values({
          id,
          org_id: actor.orgId,
          name: input.name,
          description: input.description ?? null,
          created_by_member_id: actor.memberId,
          created_at: now,
          updated_at: now,
        })
        .execute()
      await grantCreator(deps, trx, actor, 'skill_hub', id)
      await recordAudit(deps, trx, actor, 'skill_hub.created', { type: 'skill_hub', id })
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw hubExists()
    throw error
  }
  return getHub(deps, actor, id)
}

/** Renames or re-describes a hub (editor). */
export async function updateHub(
  deps: Deps,
  actor: Actor,
  hubId: string,
  input: { name?: string; description?: string | null },
): Promise<SkillHubView> {
  try {
    await deps.db.transaction().execute(async (trx) => {
      await requireRole(trx, actor, 'skill_hub', hubId, 'editor')
      const changes: { name?: string; description?: string | null; updated_at: string } = { updated_at: isoAt(deps) }
      if (input.name !== undefined) changes.name = input.name
      if (input.description !== undefined) changes.description = input.description
      await trx.updateTable('skill_hub').set(changes).where('id', '=', hubId).execute()
      await recordAudit(
        deps,
        trx,
        actor,
        'skill_hub.updated',
        { type: 'skill_hub', id: hubId },
        { fields: Object.keys(input).sort().join(',') },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw hubExists()
    throw error
  }
  return getHub(deps, actor, hubId)
}

/** Deletes a hub with its skill list, assignments and grants (manager); the skills stay. */
export async function deleteHub(deps: Deps, actor: Actor, hubId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'skill_hub', hubId, 'manager')
    // Recorded before the delete, so the delivery event can still name who received the hub.
    await recordAudit(deps, trx, actor, 'skill_hub.deleted', { type: 'skill_hub', id: hubId })
    await dropGrants(trx, 'skill_hub', hubId)
    await trx.deleteFrom('skill_hub').where('id', '=', hubId).execute()
  })
}

/** The hub's skills in the order they were added. */
export async function listHubSkills(
  deps: Deps,
  actor: Actor,
  hubId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<SkillView>> {
  await requireRole(deps.db, actor, 'skill_hub', hubId, 'viewer')
  const query = skillQuery(deps.db, actor.orgId)
    .innerJoin('skill_hub_skill as shs', 'shs.config_object_id', 'co.id')
    .select('shs.id as entry_id')
    .where('shs.hub_id', '=', hubId)
  return keysetPage(query, {
    scope: `hub-skills:${hubId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'shs.id', field: 'entry_id', direction: 'asc' }],
    map: skillView,
  })
}

/**
 * The resolved form of each active skill in the hub, in the order they were added: every file of
 * each skill's folder, ready to install.
 */
export async function resolveHub(
  deps: Deps,
  actor: Actor,
  hubId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<ResolvedView>> {
  await requireRole(deps.db, actor, 'skill_hub', hubId, 'viewer')
  const query = deps.db
    .selectFrom('skill_hub_skill as shs')
    .innerJoin('config_object as co', 'co.id', 'shs.config_object_id')
    .select(['shs.id', 'co.id as object_id'])
    .where('shs.hub_id', '=', hubId)
    .where('shs.org_id', '=', actor.orgId)
    .where('co.status', '=', 'active')
  const ids = await keysetPage(query, {
    scope: `hub-resolved:${hubId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'shs.id', field: 'id', direction: 'asc' }],
    map: (row) => row.object_id,
  })
  const items: ResolvedView[] = []
  for (const id of ids.items) items.push(await resolveObjectIn(deps, actor.orgId, id))
  return { items, nextCursor: ids.nextCursor }
}

/** Adds a visible skill to a hub (editor on the hub); 404 `skill_not_found` for non-skills, 409 `already_in_hub`. */
export async function addHubSkill(deps: Deps, actor: Actor, hubId: string, skillId: string): Promise<SkillView> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'skill_hub', hubId, 'editor')
    const skill = await skillQuery(trx, actor.orgId).where('co.id', '=', skillId).executeTakeFirst()
    if (!skill) throw controlPlaneError('skill_not_found', 'Skill not found')
    await requireRole(trx, actor, 'config_object', skillId, 'viewer').catch(() => {
      throw controlPlaneError('skill_not_found', 'Skill not found')
    })
    const existing = await trx
      .selectFrom('skill_hub_skill')
      .select('id')
      .where('hub_id', '=', hubId)
      .where('config_object_id', '=', skillId)
      .executeTakeFirst()
    if (existing) throw controlPlaneError('already_in_hub', 'The skill is already in the hub')
    await trx
      .insertInto('skill_hub_skill')
      .values({
        id: newId('shs'),
        org_id: actor.orgId,
        hub_id: hubId,
        config_object_id: skillId,
        created_by_member_id: actor.memberId,
        created_at: isoAt(deps),
      })
      .execute()
    await recordAudit(deps, trx, actor, 'skill_hub.skill_added', { type: 'skill_hub', id: hubId }, { skillId })
  })
  return skillView(await skillQuery(deps.db, actor.orgId).where('co.id', '=', skillId).executeTakeFirstOrThrow())
}

/** Removes a skill from a hub (editor); 404 `skill_not_found` when it is not in the hub. */
export async function removeHubSkill(deps: Deps, actor: Actor, hubId: string, skillId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'skill_hub', hubId, 'editor')
    const deleted = await trx
      .deleteFrom('skill_hub_skill')
      .where('hub_id', '=', hubId)
      .where('config_object_id', '=', skillId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) throw controlPlaneError('skill_not_found', 'The skill is not in the hub')
    await recordAudit(deps, trx, actor, 'skill_hub.skill_removed', { type: 'skill_hub', id: hubId }, { skillId })
  })
}

type AssignmentRow = {
  id: string
  hub_id: string
  member_id: string | null
  team_id: string | null
  org_wide: number
  created_by_member_id: string | null
  created_at: string
}

function assignmentView(row: AssignmentRow): AssignmentView {
  return {
    id: row.id,
    hubId: row.hub_id,
    memberId: row.member_id,
    teamId: row.team_id,
    orgWide: row.org_wide === 1,
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
  }
}

/** Who the hub is assigned to (viewer). */
export async function listAssignments(
  deps: Deps,
  actor: Actor,
  hubId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<AssignmentView>> {
  await requireRole(deps.db, actor, 'skill_hub', hubId, 'viewer')
  const query = deps.db.selectFrom('skill_hub_assignment').selectAll().where('hub_id', '=', hubId)
  return keysetPage(query, {
    scope: `hub-assignments:${hubId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: assignmentView,
  })
}

/** Assigns the hub to a member, a team or the organization (manager; org-wide needs an admin); 409 `already_assigned`. */
export async function assignHub(
  deps: Deps,
  actor: Actor,
  hubId: string,
  principal: GrantPrincipal,
): Promise<AssignmentView> {
  const id = newId('sha')
  try {
    await deps.db.transaction().execute(async (trx) => {
      await requireRole(trx, actor, 'skill_hub', hubId, 'manager')
      if ('orgWide' in principal && !isOrgAdmin(actor))
        throw controlPlaneError('forbidden', 'Only owners and admins may assign a hub to the whole organization', {
          details: {
            requiredOrgRole: 'admin',
          },
        })
      await requirePrincipal(trx, actor.orgId, principal)
      const key = principalKey(principal)
      const existing = await trx
        .selectFrom('skill_hub_assignment')
        .select('id')
        .where('hub_id', '=', hubId)
        .where('principal_key', '=', key)
        .executeTakeFirst()
      if (existing)
        throw controlPlaneError('already_assigned', 'The hub is already assigned to that principal', {
          details: {
            assignmentId: existing.id,
          },
        })
      await trx
        .insertInto('skill_hub_assignment')
        .values({
          id,
          org_id: actor.orgId,
          hub_id: hubId,
          member_id: 'memberId' in principal ? principal.memberId : null,
          team_id: 'teamId' in principal ? principal.teamId : null,
          org_wide: 'orgWide' in principal ? 1 : 0,
          principal_key: key,
          created_by_member_id: actor.memberId,
          created_at: isoAt(deps),
        })
        .execute()
      await recordAudit(
        deps,
        trx,
        actor,
        'skill_hub.assigned',
        { type: 'skill_hub', id: hubId },
        { assignmentId: id, principal: key.split(':')[0]! },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('already_assigned', 'The hub is already assigned to that principal')
    throw error
  }
  return assignmentView(
    await deps.db.selectFrom('skill_hub_assignment').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
  )
}

/** Removes an assignment (manager); its skills stop reaching those people at once. */
export async function unassignHub(deps: Deps, actor: Actor, hubId: string, assignmentId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'skill_hub', hubId, 'manager')
    const row = await trx
      .selectFrom('skill_hub_assignment')
      .select('id')
      .where('id', '=', assignmentId)
      .where('hub_id', '=', hubId)
      .executeTakeFirst()
    if (!row) throw controlPlaneError('skill_hub_assignment_not_found', 'Assignment not found')
    // Recorded while the assignment still exists, so the delivery event can name who loses it.
    await recordAudit(deps, trx, actor, 'skill_hub.unassigned', { type: 'skill_hub', id: hubId }, { assignmentId })
    await trx.deleteFrom('skill_hub_assignment').where('id', '=', assignmentId).execute()
  })
}
