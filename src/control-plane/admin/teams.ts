/**
 * Teams: named groups of members inside one organization (names unique per organization, 409
 * `team_exists`). Member ids are checked against the actor's organization, so another
 * organization's member id is a 404 like any unknown id.
 * @module
 */
import type { Transaction } from 'kysely'
import { newId } from '../../core/ids.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { recordAudit, type Actor } from './audit.ts'
import type { MemberView } from './members.ts'
import { asRole } from '../policy.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A team as the API shows it. */
export interface TeamView {
  id: string
  name: string
  description: string | null
  memberCount: number
  createdAt: string
  updatedAt: string
}

const teamNotFound = () => controlPlaneError('team_not_found', 'Team not found')
const memberNotFound = () => controlPlaneError('member_not_found', 'Member not found')

function teamQuery(deps: Deps, orgId: string) {
  return deps.db
    .selectFrom('team as t')
    .select((eb) => [
      't.id',
      't.name',
      't.description',
      't.created_at',
      't.updated_at',
      eb
        .selectFrom('team_member as tm')
        .select((e) => e.fn.countAll<number>().as('n'))
        .whereRef('tm.team_id', '=', 't.id')
        .as('member_count'),
    ])
    .where('t.org_id', '=', orgId)
}

type TeamRow = {
  id: string
  name: string
  description: string | null
  created_at: string
  updated_at: string
  member_count: number | null
}

function view(row: TeamRow): TeamView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    memberCount: Number(row.member_count ?? 0),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

async function requireMembers(trx: Transaction<ControlPlaneDb>, orgId: string, memberIds: string[]): Promise<void> {
  const unique = [...new Set(memberIds)]
  if (unique.length === 0) return
  const found = await trx
    .selectFrom('member')
    .select('id')
    .where('org_id', '=', orgId)
    .where('id', 'in', unique)
    .execute()
  if (found.length !== unique.length) throw memberNotFound()
}

async function requireTeam(trx: Transaction<ControlPlaneDb>, orgId: string, teamId: string): Promise<void> {
  const row = await trx
    .selectFrom('team')
    .select('id')
    .where('id', '=', teamId)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw teamNotFound()
}

/** Teams in creation order. */
export function listTeams(
  deps: Deps,
  orgId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<TeamView>> {
  return keysetPage(teamQuery(deps, orgId), {
    scope: 'teams',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 't.id', field: 'id', direction: 'asc' }],
    map: view,
  })
}

/** One team. */
export async function getTeam(deps: Deps, orgId: string, teamId: string): Promise<TeamView> {
  const row = await teamQuery(deps, orgId).where('t.id', '=', teamId).executeTakeFirst()
  if (!row) throw teamNotFound()
  return view(row)
}

/** Creates a team, optionally with initial members. */
export async function createTeam(
  deps: Deps,
  actor: Actor,
  input: { name: string; description?: string | null; memberIds?: string[] },
): Promise<TeamView> {
  const id = newId('team')
  const now = isoAt(deps)
  try {
    await deps.db.transaction().execute(async (trx) => {
      await requireMembers(trx, actor.orgId, input.memberIds ?? [])
      await trx
        .insertInto('team')
        .values({
          id,
          org_id: actor.orgId,
          name: input.name,
          description: input.description ?? null,
          created_at: now,
          updated_at: now,
        })
        .execute()
      for (const memberId of new Set(input.memberIds ?? []))
        await trx.insertInto('team_member').values({ team_id: id, member_id: memberId, created_at: now }).execute()
      await recordAudit(
        deps,
        trx,
        actor,
        'team.created',
        { type: 'team', id },
        { members: new Set(input.memberIds ?? []).size },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw controlPlaneError('team_exists', 'A team with that name already exists')
    throw error
  }
  return getTeam(deps, actor.orgId, id)
}

/** Renames or re-describes a team. */
export async function updateTeam(
  deps: Deps,
  actor: Actor,
  teamId: string,
  input: { name?: string; description?: string | null },
): Promise<TeamView> {
  try {
    await deps.db.transaction().execute(async (trx) => {
      await requireTeam(trx, actor.orgId, teamId)
      const changes: { name?: string; description?: string | null; updated_at: string } = { updated_at: isoAt(deps) }
      if (input.name !== undefined) changes.name = input.name
      if (input.description !== undefined) changes.description = input.description
      await trx.updateTable('team').set(changes).where('id', '=', teamId).execute()
      await recordAudit(
        deps,
        trx,
        actor,
        'team.updated',
        { type: 'team', id: teamId },
        { fields: Object.keys(input).sort().join(',') },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw controlPlaneError('team_exists', 'A team with that name already exists')
    throw error
  }
  return getTeam(deps, actor.orgId, teamId)
}

/** Deletes a team and its memberships. */
export async function deleteTeam(deps: Deps, actor: Actor, teamId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireTeam(trx, actor.orgId, teamId)
    // Recorded before the delete, so the delivery event can still name the team's members.
    await recordAudit(deps, trx, actor, 'team.deleted', { type: 'team', id: teamId })
    await trx.deleteFrom('team').where('id', '=', teamId).execute()
  })
}

/** The team's members in joining-the-organization order. */
export async function listTeamMembers(
  deps: Deps,
  orgId: string,
  teamId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<MemberView>> {
  const team = await deps.db
    .selectFrom('team')
    .select('id')
    .where('id', '=', teamId)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!team) throw teamNotFound()
  const query = deps.db
    .selectFrom('team_member as tm')
    .innerJoin('member as m', 'm.id', 'tm.member_id')
    .innerJoin('app_user as u', 'u.id', 'm.user_id')
    .select(['m.id', 'm.user_id', 'm.role', 'm.created_at', 'm.updated_at', 'u.email', 'u.name'])
    .where('tm.team_id', '=', teamId)
  return keysetPage(query, {
    scope: `team-members:${teamId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'm.id', field: 'id', direction: 'asc' }],
    map: (row) => ({
      id: row.id,
      userId: row.user_id,
      email: row.email,
      name: row.name,
      role: asRole(row.role),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }),
  })
}

/** Adds a member to a team; 409 `already_in_team` when present. */
export async function addTeamMember(deps: Deps, actor: Actor, teamId: string, memberId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireTeam(trx, actor.orgId, teamId)
    await requireMembers(trx, actor.orgId, [memberId])
    const existing = await trx
      .selectFrom('team_member')
      .select('member_id')
      .where('team_id', '=', teamId)
      .where('member_id', '=', memberId)
      .executeTakeFirst()
    if (existing) throw controlPlaneError('already_in_team', 'The member is already in the team')
    await trx
      .insertInto('team_member')
      .values({ team_id: teamId, member_id: memberId, created_at: isoAt(deps) })
      .execute()
    await recordAudit(deps, trx, actor, 'team.member_added', { type: 'team', id: teamId }, { memberId })
  })
}

/** Removes a member from a team; 404 when the member is not in it. */
export async function removeTeamMember(deps: Deps, actor: Actor, teamId: string, memberId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await requireTeam(trx, actor.orgId, teamId)
    const deleted = await trx
      .deleteFrom('team_member')
      .where('team_id', '=', teamId)
      .where('member_id', '=', memberId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) throw memberNotFound()
    await recordAudit(deps, trx, actor, 'team.member_removed', { type: 'team', id: teamId }, { memberId })
  })
}
