/**
 * SCIM Users of an organization (RFC 7643 §4.1): each resource links an account (found or created
 * by its email, the userName) to the organization. While the resource is active the account is a
 * member; deactivating it (`active: false`, or DELETE) removes the membership, disables the
 * member's API keys, revokes their OAuth and device tokens and ends the account's sessions, all in
 * the transaction that records the change, so the next request with any of them is refused.
 * @module
 */
import { assertAdmitted, readAdmissionPolicy } from '../admission/admission-policy.ts'
import type { Transaction } from 'kysely'
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { removeMembership } from '../admin/members.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { ScimUserTable } from './scim-tables.ts'
import { scimError, scimStatusError } from './scim-error.ts'
import type { ScimFilter } from './scim-protocol.ts'
import { checkIfMatch, versionOf } from './scim-protocol.ts'
import { accountNameOf, inputOf, userResource, type ScimUserInput } from './scim-user-attributes.ts'

/** What every SCIM operation runs with: the domain, the acting token and the base of `location`s. */
export interface ScimContext {
  deps: Deps
  actor: Actor
  /** `…/scim/v2`, without a trailing slash. */
  base: string
}

type Trx = Transaction<ControlPlaneDb>

/** Marks an account created by provisioning: no password can match it (sign-in goes through SSO). */
const NO_PASSWORD = 'scim$no-password'

const notFound = () => scimStatusError(404, 'No such User in this organization')
const taken = () => scimError('uniqueness', 'A User with that userName or externalId already exists')

const COLUMNS: Record<string, 'user_name' | 'external_id' | 'display_name'> = {
  userName: 'user_name',
  externalId: 'external_id',
  displayName: 'display_name',
}

/** The filter attributes Users answer. */
export const USER_FILTERS = ['userName', 'externalId', 'displayName'] as const

async function rowOf(db: Deps['db'] | Trx, orgId: string, id: string): Promise<ScimUserTable> {
  const row = await db
    .selectFrom('scim_user')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) throw notFound()
  return row
}

async function externalIdTaken(trx: Trx, orgId: string, externalId: string | null, except: string): Promise<boolean> {
  if (externalId === null) return false
  const other = await trx
    .selectFrom('scim_user')
    .select('id')
    .where('org_id', '=', orgId)
    .where('external_id', '=', externalId)
    .where('id', '!=', except)
    .executeTakeFirst()
  return other !== undefined
}

/**
 * Makes the account a member (role `member`) unless it already is one. The one place SCIM admits
 * a person to the organization (creation and reactivation both come here), so the organization's
 * admission policy, when it has one, is asked here, before the membership is written.
 */
async function activate(deps: Deps, trx: Trx, actor: Actor, userId: string, email: string): Promise<void> {
  const member = await trx
    .selectFrom('member')
    .select('id')
    .where('org_id', '=', actor.orgId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  if (member) return
  assertAdmitted(await readAdmissionPolicy(trx, actor.orgId), 'scim', email)
  const now = isoAt(deps)
  const memberId = newId('mem')
  await trx
    .insertInto('member')
    .values({ id: memberId, org_id: actor.orgId, user_id: userId, role: 'member', created_at: now, updated_at: now })
    .execute()
  await recordAudit(deps, trx, actor, 'member.joined', { type: 'member', id: memberId }, { role: 'member' })
}

/**
 * Ends the account's membership and every credential it had here: API keys and OAuth/device
 * tokens (bound to the membership) and, when this was the account's last organization, its
 * sessions. Sessions belong to the account: one that still reaches another organization is left
 * to it (it can no longer act here, the membership being gone), so one organization's identity
 * provider cannot sign a person out of organizations it does not manage. Nothing happens for an
 * account that was not a member.
 */
async function deactivate(deps: Deps, trx: Trx, actor: Actor, userId: string): Promise<void> {
  const member = await trx
    .selectFrom('member')
    .select(['id', 'role'])
    .where('org_id', '=', actor.orgId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  if (!member) return
  if (member.role === 'owner')
    throw scimError('mutability', "The organization's owner cannot be deprovisioned; transfer ownership first")
  await removeMembership(deps, trx, actor, member.id)
  const elsewhere = await trx.selectFrom('member').select('id').where('user_id', '=', userId).executeTakeFirst()
  if (elsewhere) return
  const ended = await trx.deleteFrom('user_session').where('user_id', '=', userId).executeTakeFirst()
  const count = Number(ended.numDeletedRows)
  if (count > 0) await recordAudit(deps, trx, actor, 'session.revoked', { type: 'user', id: userId }, { count })
}

function columnsOf(input: ScimUserInput) {
  return {
    user_name: input.userName,
    external_id: input.externalId,
    display_name: input.displayName,
    given_name: input.givenName,
    family_name: input.familyName,
    emails: input.emails ? JSON.stringify(input.emails) : null,
    active: input.active ? 1 : 0,
  }
}

/** Runs a write, turning a unique-constraint race into 409 `uniqueness`. */
async function writing<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    throw isUniqueViolation(error) ? taken() : error
  }
}

/** POST /Users: links the account with this email (creating it when there is none). */
export async function createScimUser(c: ScimContext, input: ScimUserInput): Promise<Record<string, unknown>> {
  const { deps, actor } = c
  const row = await writing(() =>
    deps.db.transaction().execute(async (trx) => {
      const existing = await trx
        .selectFrom('scim_user')
        .select('id')
        .where('org_id', '=', actor.orgId)
        .where('user_name', '=', input.userName)
        .executeTakeFirst()
      if (existing || (await externalIdTaken(trx, actor.orgId, input.externalId, ''))) throw taken()
      const now = isoAt(deps)
      let account = await trx.selectFrom('app_user').select('id').where('email', '=', input.userName).executeTakeFirst()
      const createdAccount = account === undefined
      if (!account) {
        account = { id: newId('usr') }
        await trx
          .insertInto('app_user')
          .values({
            id: account.id,
            email: input.userName,
            name: accountNameOf(input),
            password_hash: NO_PASSWORD,
            created_at: now,
            updated_at: now,
          })
          .execute()
      }
      const row: ScimUserTable = {
        id: newId('scu'),
        org_id: actor.orgId,
        user_id: account.id,
        ...columnsOf(input),
        created_account: createdAccount ? 1 : 0,
        created_at: now,
        updated_at: now,
      }
      await trx.insertInto('scim_user').values(row).execute()
      if (input.active) await activate(deps, trx, actor, account.id, input.userName)
      await recordAudit(
        deps,
        trx,
        actor,
        'scim_user.provisioned',
        { type: 'scim_user', id: row.id },
        { active: input.active, accountCreated: createdAccount },
      )
      return row
    }),
  )
  return userResource(row, c.base)
}

/** GET /Users/:id. */
export async function getScimUser(c: ScimContext, id: string): Promise<Record<string, unknown>> {
  return userResource(await rowOf(c.deps.db, c.actor.orgId, id), c.base)
}

/** GET /Users: a filtered page in creation order, with the total. */
export async function listScimUsers(
  c: ScimContext,
  filter: ScimFilter | null,
  page: { startIndex: number; count: number },
): Promise<{ total: number; resources: Record<string, unknown>[] }> {
  let query = c.deps.db.selectFrom('scim_user').where('org_id', '=', c.actor.orgId)
  if (filter) {
    const column = COLUMNS[filter.attribute]!
    // userName is case-insensitive (RFC 7643 §4.1.1) and stored lower-cased.
    query = query.where(column, '=', column === 'user_name' ? filter.value.trim().toLowerCase() : filter.value)
  }
  const counted = await query.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  const rows =
    page.count === 0
      ? []
      : await query
          .selectAll()
          .orderBy('created_at')
          .orderBy('id')
          .limit(page.count)
          .offset(page.startIndex - 1)
          .execute()
  return { total: Number(counted.n), resources: rows.map((row) => userResource(row, c.base)) }
}

/**
 * PUT and PATCH /Users/:id: `change` turns the current attributes into the new ones. `If-Match`
 * is checked against the current version; userName cannot change (the account is found by it).
 */
export async function updateScimUser(
  c: ScimContext,
  id: string,
  request: Request,
  change: (current: ScimUserInput) => ScimUserInput,
): Promise<Record<string, unknown>> {
  const { deps, actor } = c
  const row = await writing(() =>
    deps.db.transaction().execute(async (trx) => {
      const current = await rowOf(trx, actor.orgId, id)
      checkIfMatch(request, versionOf(stripMeta(userResource(current, c.base))))
      const before = inputOf(current)
      const next = change(before)
      if (next.userName !== before.userName)
        throw scimError('mutability', 'userName cannot change; deprovision this User and provision the new address')
      if (next.externalId !== before.externalId && (await externalIdTaken(trx, actor.orgId, next.externalId, id)))
        throw taken()
      const updated: ScimUserTable = { ...current, ...columnsOf(next), updated_at: isoAt(deps) }
      await trx.updateTable('scim_user').set(updated).where('id', '=', id).execute()
      if (current.created_account === 1 && accountNameOf(next) !== accountNameOf(before))
        await trx
          .updateTable('app_user')
          .set({ name: accountNameOf(next), updated_at: updated.updated_at })
          .where('id', '=', current.user_id)
          .execute()
      if (next.active && !before.active) await activate(deps, trx, actor, current.user_id, next.userName)
      if (!next.active) await deactivate(deps, trx, actor, current.user_id)
      const action = before.active && !next.active ? 'scim_user.deactivated' : 'scim_user.updated'
      await recordAudit(deps, trx, actor, action, { type: 'scim_user', id }, { active: next.active })
      return updated
    }),
  )
  return userResource(row, c.base)
}

/** DELETE /Users/:id: deactivates, then forgets the resource (the account itself stays). */
export async function deleteScimUser(c: ScimContext, id: string, request: Request): Promise<void> {
  const { deps, actor } = c
  await deps.db.transaction().execute(async (trx) => {
    const current = await rowOf(trx, actor.orgId, id)
    checkIfMatch(request, versionOf(stripMeta(userResource(current, c.base))))
    await deactivate(deps, trx, actor, current.user_id)
    await trx.deleteFrom('scim_user').where('id', '=', id).execute()
    await recordAudit(deps, trx, actor, 'scim_user.deleted', { type: 'scim_user', id })
  })
}

/** The SCIM User ids of accounts, for the members of Groups (accounts without one are left out). */
export async function scimUserIdsOf(
  db: Deps['db'] | Trx,
  orgId: string,
  userIds: string[],
): Promise<Map<string, string>> {
  if (userIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('scim_user')
    .select(['id', 'user_id'])
    .where('org_id', '=', orgId)
    .where('user_id', 'in', userIds)
    .execute()
  return new Map(rows.map((r) => [r.user_id, r.id]))
}

/** A rendered resource without `meta`: what its version is computed over. */
export function stripMeta(resource: Record<string, unknown>): Record<string, unknown> {
  const { meta: _meta, ...rest } = resource
  return rest
}
