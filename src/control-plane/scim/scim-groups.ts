/**
 * SCIM Groups (RFC 7643 §4.2) are the organization's teams: `displayName` is the team's name and
 * `members` are the SCIM Users in it. Team members that provisioning does not manage (people who
 * joined by invitation) are neither shown nor touched, so a provider replacing a Group's members
 * cannot remove someone it never knew about.
 * @module
 */
import type { Transaction } from 'kysely'
import { newId } from '../../core/ids.ts'
import { recordAudit } from '../admin/audit.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt } from '../deps.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { scimError, scimStatusError } from './scim-error.ts'
import {
  checkIfMatch,
  MAX_SCIM_MEMBERS,
  optionalString,
  type PatchOperation,
  type ScimFilter,
  versionOf,
} from './scim-protocol.ts'
import type { ScimContext } from './scim-users.ts'

/** The core Group schema. */
export const GROUP_URN = 'urn:ietf:params:scim:schemas:core:2.0:Group'
/** The filter attributes Groups answer. */
export const GROUP_FILTERS = ['displayName', 'externalId'] as const

type Trx = Transaction<ControlPlaneDb>
type Db = ScimContext['deps']['db'] | Trx

/** What a Group resource sets; `members` are SCIM User ids. */
export interface ScimGroupInput {
  displayName: string
  externalId: string | null
  members: Set<string>
}

const notFound = () => scimStatusError(404, 'No such Group in this organization')

function displayName(value: unknown): string {
  const name = optionalString(value, 'displayName', 120)
  if (name === null) throw scimError('invalidValue', 'displayName is required')
  return name
}

function memberIds(value: unknown): string[] {
  const list = value === null || value === undefined ? [] : Array.isArray(value) ? value : [value]
  if (list.length > MAX_SCIM_MEMBERS) throw scimError('tooMany', `At most ${MAX_SCIM_MEMBERS} members per request`)
  return list.map((entry) => {
    const id = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).value : undefined
    if (typeof id !== 'string' || id.length > 64)
      throw scimError('invalidValue', 'Each member is {"value": "<User id>"}')
    return id
  })
}

/** Reads a full Group resource (POST and PUT). */
export function readGroupResource(body: Record<string, unknown>): ScimGroupInput {
  return {
    displayName: displayName(body.displayName),
    externalId: optionalString(body.externalId, 'externalId', 255),
    members: new Set(memberIds(body.members)),
  }
}

function setGroupAttribute(next: ScimGroupInput, path: string, op: PatchOperation['op'], value: unknown): void {
  const filtered = /^members\[value eq "([^"]{1,64})"\]$/i.exec(path)
  if (filtered) {
    if (op !== 'remove') throw scimError('invalidPath', 'A members[value eq …] path is only removed')
    next.members.delete(filtered[1]!)
    return
  }
  switch (path.toLowerCase()) {
    case 'members':
      if (op === 'replace') next.members = new Set(memberIds(value))
      else if (op === 'add') for (const id of memberIds(value)) next.members.add(id)
      else if (value === undefined || value === null) next.members.clear()
      else for (const id of memberIds(value)) next.members.delete(id)
      return
    case 'displayname':
      if (op === 'remove') throw scimError('mutability', 'displayName cannot be removed')
      next.displayName = displayName(value)
      return
    case 'externalid':
      next.externalId = op === 'remove' ? null : optionalString(value, 'externalId', 255)
      return
  }
  throw scimError('invalidPath', `Unsupported path: ${path}`)
}

/** Applies PATCH operations (path and value-object forms) to a Group's attributes. */
export function patchGroup(current: ScimGroupInput, operations: PatchOperation[]): ScimGroupInput {
  const next: ScimGroupInput = { ...current, members: new Set(current.members) }
  for (const operation of operations) {
    if (operation.path !== null) {
      setGroupAttribute(
        next,
        operation.path.replace(new RegExp(`^${GROUP_URN}:`, 'i'), ''),
        operation.op,
        operation.value,
      )
      continue
    }
    if (typeof operation.value !== 'object' || operation.value === null || Array.isArray(operation.value))
      throw scimError('invalidValue', 'An operation without a path has an object value')
    for (const [key, value] of Object.entries(operation.value as Record<string, unknown>)) {
      // Entra repeats the resource's id (and some clients its schemas) in the value object.
      if (['id', 'schemas', 'meta'].includes(key.toLowerCase())) continue
      setGroupAttribute(next, key, operation.op, value)
    }
  }
  return next
}

interface GroupRow {
  id: string
  name: string
  created_at: string
  updated_at: string
  external_id: string | null
}

function groupQuery(db: Db, orgId: string) {
  return db.selectFrom('team as t').leftJoin('scim_group as g', 'g.team_id', 't.id').where('t.org_id', '=', orgId)
}

const GROUP_COLUMNS = ['t.id', 't.name', 't.created_at', 't.updated_at', 'g.external_id'] as const

/** The SCIM Users in a team: SCIM User id → account email. */
async function membersOf(db: Db, orgId: string, teamId: string): Promise<Map<string, string>> {
  return (await membersOfTeams(db, orgId, [teamId])).get(teamId) ?? new Map()
}

/** {@link membersOf} for a page of teams in one query. */
async function membersOfTeams(db: Db, orgId: string, teamIds: string[]): Promise<Map<string, Map<string, string>>> {
  const out = new Map<string, Map<string, string>>()
  if (teamIds.length === 0) return out
  const rows = await db
    .selectFrom('team_member as tm')
    .innerJoin('member as m', 'm.id', 'tm.member_id')
    .innerJoin('scim_user as s', (join) => join.onRef('s.user_id', '=', 'm.user_id').on('s.org_id', '=', orgId))
    .select(['tm.team_id', 's.id', 's.user_name'])
    .where('tm.team_id', 'in', teamIds)
    .orderBy('s.id')
    .execute()
  for (const row of rows) {
    let members = out.get(row.team_id)
    if (!members) out.set(row.team_id, (members = new Map()))
    members.set(row.id, row.user_name)
  }
  return out
}

function groupResource(row: GroupRow, members: Map<string, string> | null, base: string): Record<string, unknown> {
  const resource: Record<string, unknown> = {
    schemas: [GROUP_URN],
    id: row.id,
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    displayName: row.name,
  }
  if (members)
    resource.members = [...members].map(([value, display]) => ({
      value,
      display,
      type: 'User',
      $ref: `${base}/Users/${value}`,
    }))
  // The version covers the members even when they are left out of the answer.
  const version = versionOf({ ...resource, members: members ? [...members.keys()] : null })
  resource.meta = {
    resourceType: 'Group',
    created: row.created_at,
    lastModified: row.updated_at,
    location: `${base}/Groups/${row.id}`,
    version,
  }
  return resource
}

async function render(c: ScimContext, db: Db, row: GroupRow, withMembers: boolean) {
  return shown(groupResource(row, await membersOf(db, c.actor.orgId, row.id), c.base), withMembers)
}

function shown(resource: Record<string, unknown>, withMembers: boolean): Record<string, unknown> {
  if (!withMembers) delete resource.members
  return resource
}

async function groupRow(db: Db, orgId: string, id: string): Promise<GroupRow> {
  const row = await groupQuery(db, orgId).select(GROUP_COLUMNS).where('t.id', '=', id).executeTakeFirst()
  if (!row) throw notFound()
  return row
}

/** Makes the team's SCIM members exactly `wanted`, auditing each change; unknown User ids are 400. */
async function syncMembers(c: ScimContext, trx: Trx, teamId: string, current: Set<string>, wanted: Set<string>) {
  const { deps, actor } = c
  const added = [...wanted].filter((id) => !current.has(id))
  const removed = [...current].filter((id) => !wanted.has(id))
  const memberOf = async (scimUserId: string): Promise<string | null> => {
    const row = await trx
      .selectFrom('scim_user as s')
      .leftJoin('member as m', (join) => join.onRef('m.user_id', '=', 's.user_id').on('m.org_id', '=', actor.orgId))
      .select(['s.id', 'm.id as member_id'])
      .where('s.org_id', '=', actor.orgId)
      .where('s.id', '=', scimUserId)
      .executeTakeFirst()
    if (!row) throw scimError('invalidValue', `No User ${scimUserId} in this organization`)
    return row.member_id
  }
  const now = isoAt(deps)
  for (const id of added) {
    // A deactivated User has no membership to put in a team; the provider may still list it.
    const memberId = await memberOf(id)
    if (memberId === null) continue
    await trx.insertInto('team_member').values({ team_id: teamId, member_id: memberId, created_at: now }).execute()
    await recordAudit(deps, trx, actor, 'team.member_added', { type: 'team', id: teamId }, { memberId })
  }
  for (const id of removed) {
    const memberId = await memberOf(id)
    if (memberId === null) continue
    await trx.deleteFrom('team_member').where('team_id', '=', teamId).where('member_id', '=', memberId).execute()
    await recordAudit(deps, trx, actor, 'team.member_removed', { type: 'team', id: teamId }, { memberId })
  }
}

async function writing<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw isUniqueViolation(error) ? scimError('uniqueness', 'A Group with that displayName already exists') : error
  }
}

async function setExternalId(trx: Trx, orgId: string, teamId: string, externalId: string | null): Promise<void> {
  await trx.deleteFrom('scim_group').where('team_id', '=', teamId).execute()
  if (externalId !== null)
    await trx.insertInto('scim_group').values({ team_id: teamId, org_id: orgId, external_id: externalId }).execute()
}

/** POST /Groups: creates a team. */
export async function createScimGroup(c: ScimContext, input: ScimGroupInput): Promise<Record<string, unknown>> {
  const { deps, actor } = c
  return writing(() =>
    deps.db.transaction().execute(async (trx) => {
      const id = newId('team')
      const now = isoAt(deps)
      await trx
        .insertInto('team')
        .values({
          id,
          org_id: actor.orgId,
          name: input.displayName,
          description: null,
          created_at: now,
          updated_at: now,
        })
        .execute()
      await setExternalId(trx, actor.orgId, id, input.externalId)
      await recordAudit(deps, trx, actor, 'team.created', { type: 'team', id }, { members: input.members.size })
      await syncMembers(c, trx, id, new Set(), input.members)
      return render(c, trx, await groupRow(trx, actor.orgId, id), true)
    }),
  )
}

/** GET /Groups/:id (`members` left out when excluded). */
export async function getScimGroup(c: ScimContext, id: string, withMembers: boolean) {
  return render(c, c.deps.db, await groupRow(c.deps.db, c.actor.orgId, id), withMembers)
}

/** GET /Groups: a filtered page in creation order, with the total. */
export async function listScimGroups(
  c: ScimContext,
  filter: ScimFilter | null,
  page: { startIndex: number; count: number },
  withMembers: boolean,
): Promise<{ total: number; resources: Record<string, unknown>[] }> {
  let query = groupQuery(c.deps.db, c.actor.orgId)
  if (filter?.attribute === 'displayName') query = query.where('t.name', '=', filter.value)
  if (filter?.attribute === 'externalId') query = query.where('g.external_id', '=', filter.value)
  const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  const rows =
    page.count === 0
      ? []
      : await query
          .select(GROUP_COLUMNS)
          .orderBy('t.created_at')
          .orderBy('t.id')
          .limit(page.count)
          .offset(page.startIndex - 1)
          .execute()
  const members = await membersOfTeams(
    c.deps.db,
    c.actor.orgId,
    rows.map((row) => row.id),
  )
  const resources = rows.map((row) => shown(groupResource(row, members.get(row.id) ?? new Map(), c.base), withMembers))
  return { total: Number(counted.n), resources }
}

/** PUT and PATCH /Groups/:id: `change` turns the current attributes into the new ones. */
export async function updateScimGroup(
  c: ScimContext,
  id: string,
  request: Request,
  change: (current: ScimGroupInput) => ScimGroupInput,
): Promise<Record<string, unknown>> {
  const { deps, actor } = c
  return writing(() =>
    deps.db.transaction().execute(async (trx) => {
      const row = await groupRow(trx, actor.orgId, id)
      const members = await membersOf(trx, actor.orgId, id)
      checkIfMatch(request, (groupResource(row, members, c.base).meta as { version: string }).version)
      const before: ScimGroupInput = {
        displayName: row.name,
        externalId: row.external_id,
        members: new Set(members.keys()),
      }
      const next = change(before)
      if (next.displayName !== before.displayName || next.externalId !== before.externalId) {
        await trx
          .updateTable('team')
          .set({ name: next.displayName, updated_at: isoAt(deps) })
          .where('id', '=', id)
          .execute()
        await setExternalId(trx, actor.orgId, id, next.externalId)
        await recordAudit(deps, trx, actor, 'team.updated', { type: 'team', id }, { fields: 'name' })
      }
      await syncMembers(c, trx, id, before.members, next.members)
      return render(c, trx, await groupRow(trx, actor.orgId, id), true)
    }),
  )
}

/** DELETE /Groups/:id: deletes the team (its members stay in the organization). */
export async function deleteScimGroup(c: ScimContext, id: string, request: Request): Promise<void> {
  const { deps, actor } = c
  await deps.db.transaction().execute(async (trx) => {
    const row = await groupRow(trx, actor.orgId, id)
    checkIfMatch(
      request,
      (groupResource(row, await membersOf(trx, actor.orgId, id), c.base).meta as { version: string }).version,
    )
    await recordAudit(deps, trx, actor, 'team.deleted', { type: 'team', id })
    await trx.deleteFrom('team').where('id', '=', id).execute()
  })
}
