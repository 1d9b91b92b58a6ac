/**
 * Plugin assignments: a plugin delivered to a member, a team or the whole organization, the way
 * a skill hub is. An assignment delivers every active object of an active plugin to the people it
 * names (see `delivered-set.ts`); access grants still decide who may see and change the plugin.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { principalKey, requirePrincipal, requireRole, type GrantPrincipal } from '../catalog/access-grants.ts'
import { isOrgAdmin } from '../catalog/grant-roles.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** A plugin assignment as the API shows it. */
export interface PluginAssignmentView {
  id: string
  pluginId: string
  memberId: string | null
  teamId: string | null
  orgWide: boolean
  createdByMemberId: string | null
  createdAt: string
}

function view(row: ControlPlaneDb['plugin_assignment']): PluginAssignmentView {
  return {
    id: row.id,
    pluginId: row.plugin_id,
    memberId: row.member_id,
    teamId: row.team_id,
    orgWide: row.org_wide === 1,
    createdByMemberId: row.created_by_member_id,
    createdAt: row.created_at,
  }
}

const alreadyAssigned = (assignmentId?: string) =>
  controlPlaneError('already_assigned', 'The plugin is already assigned to that principal', {
    details: assignmentId ? { assignmentId } : undefined,
  })

/** Who the plugin is assigned to (viewer on the plugin). */
export async function listPluginAssignments(
  deps: Deps,
  actor: Actor,
  pluginId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<PluginAssignmentView>> {
  await requireRole(deps.db, actor, 'plugin', pluginId, 'viewer')
  const query = deps.db.selectFrom('plugin_assignment').selectAll().where('plugin_id', '=', pluginId)
  return keysetPage(query, {
    scope: `plugin-assignments:${pluginId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: view,
  })
}

/** Assigns the plugin (manager; org-wide needs an owner or admin); 409 `already_assigned`. */
export async function assignPlugin(
  deps: Deps,
  actor: Actor,
  pluginId: string,
  principal: GrantPrincipal,
): Promise<PluginAssignmentView> {
  const id = newId('pla')
  try {
    await deps.db.transaction().execute(async (trx) => {
      await requireRole(trx, actor, 'plugin', pluginId, 'manager')
      if ('orgWide' in principal && !isOrgAdmin(actor))
        throw controlPlaneError('forbidden', 'Only owners and admins may assign a plugin to the whole organization', {
          details: { requiredOrgRole: 'admin' },
        })
      await requirePrincipal(trx, actor.orgId, principal)
      const key = principalKey(principal)
      const existing = await trx
        .selectFrom('plugin_assignment')
        .select('id')
        .where('plugin_id', '=', pluginId)
        .where('principal_key', '=', key)
        .executeTakeFirst()
      if (existing) throw alreadyAssigned(existing.id)
      await trx
        .insertInto('plugin_assignment')
        .values({
          id,
          org_id: actor.orgId,
          plugin_id: pluginId,
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
        'plugin.assigned',
        { type: 'plugin', id: pluginId },
        { assignmentId: id, principal: key.split(':')[0]! },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw alreadyAssigned()
    throw error
  }
  return view(await deps.db.selectFrom('plugin_assignment').selectAll().where('id', '=', id).executeTakeFirstOrThrow())
}

/** Removes an assignment (manager); the plugin's objects stop reaching those people at once. */
export async function unassignPlugin(deps: Deps, actor: Actor, pluginId: string, assignmentId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'plugin', pluginId, 'manager')
    const row = await trx
      .selectFrom('plugin_assignment')
      .select('id')
      .where('id', '=', assignmentId)
      .where('plugin_id', '=', pluginId)
      .executeTakeFirst()
    if (!row) throw controlPlaneError('plugin_assignment_not_found', 'Assignment not found')
    // Recorded while the assignment still exists, so the delivery event can name who loses it.
    await recordAudit(deps, trx, actor, 'plugin.unassigned', { type: 'plugin', id: pluginId }, { assignmentId })
    await trx.deleteFrom('plugin_assignment').where('id', '=', assignmentId).execute()
  })
}
