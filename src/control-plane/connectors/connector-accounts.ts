/**
 * Connector accounts (who the organization connects as, with sealed credentials) and connector
 * instances (one configured use of an account). Accounts are administered by owners and admins;
 * instances carry access grants (viewer, editor, manager) in the shared grant table, the creator
 * getting manager, and members see only the instances granted to them (404 otherwise).
 * @module
 */
import { newId } from '../../core/ids.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { dropGrants, requireRole, grantCreator } from '../catalog/access-grants.ts'
import type { GrantRole } from '../catalog/grant-roles.ts'
import { visibleCondition } from '../catalog/visibility-sql.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt } from '../deps.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ConnectorAccountTable, ConnectorInstanceTable } from './connector-tables.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Connector types this control plane can read. */
export const CONNECTOR_TYPES = ['git', 'github'] as const
/** A connector type. */
export type ConnectorType = (typeof CONNECTOR_TYPES)[number]
/** Instance states. */
export const INSTANCE_STATES = ['active', 'disabled'] as const

type Json = Record<string, unknown>
const parse = (text: string | null): Json | null => (text ? (JSON.parse(text) as Json) : null)

/** An account as the API shows it (credentials only as `hasCredentials`). */
export interface ConnectorAccountView {
  id: string
  connectorType: ConnectorType
  remoteId: string
  displayName: string
  metadata: Json | null
  hasCredentials: boolean
  status: string
  createdAt: string
  updatedAt: string
}

/** An instance as the API shows it. */
export interface ConnectorInstanceView {
  id: string
  connectorAccountId: string
  connectorType: ConnectorType
  name: string
  config: Json | null
  status: string
  lastSyncedAt: string | null
  lastSyncStatus: string | null
  createdAt: string
  updatedAt: string
}

const accountNotFound = () => controlPlaneError('connector_account_not_found', 'Connector account not found')

function accountView(row: ConnectorAccountTable): ConnectorAccountView {
  return {
    id: row.id,
    connectorType: row.connector_type as ConnectorType,
    remoteId: row.remote_id,
    displayName: row.display_name,
    metadata: parse(row.metadata),
    hasCredentials: row.credentials_sealed !== null,
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Maps an instance row to its view. */
export function instanceView(row: ConnectorInstanceTable): ConnectorInstanceView {
  return {
    id: row.id,
    connectorAccountId: row.connector_account_id,
    connectorType: row.connector_type as ConnectorType,
    name: row.name,
    config: parse(row.config),
    status: row.status,
    lastSyncedAt: row.last_synced_at,
    lastSyncStatus: row.last_sync_status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function sealCredentials(
  ctx: AsyncContext,
  accountId: string,
  credentials: { token: string } | null | undefined,
): string | null {
  return credentials ? ctx.box.seal(JSON.stringify(credentials), `connector_account:${accountId}`) : null
}

/** The account's token, opened from its sealed credentials (null when it has none). */
export function accountToken(
  ctx: AsyncContext,
  row: Pick<ConnectorAccountTable, 'id' | 'credentials_sealed'>,
): string | null {
  if (!row.credentials_sealed) return null
  return (JSON.parse(ctx.box.open(row.credentials_sealed, `connector_account:${row.id}`)) as { token: string }).token
}

/** Accounts of the organization in creation order. */
export function listAccounts(
  ctx: AsyncContext,
  orgId: string,
  query: { cursor?: string; limit: number; connectorType?: string },
): Promise<Page<ConnectorAccountView>> {
  let q = ctx.deps.db.selectFrom('connector_account').selectAll().where('org_id', '=', orgId)
  if (query.connectorType) q = q.where('connector_type', '=', query.connectorType)
  return keysetPage(q, {
    scope: 'connector-accounts',
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: accountView,
  })
}

/** One account. */
export async function getAccount(ctx: AsyncContext, orgId: string, id: string): Promise<ConnectorAccountView> {
  const row = await ctx.deps.db
    .selectFrom('connector_account')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst()
  if (!row) throw accountNotFound()
  return accountView(row)
}

/** Creates an account; 409 `connector_account_exists` for the same type and remote id. */
export async function createAccount(
  ctx: AsyncContext,
  actor: Actor,
  input: {
    connectorType: ConnectorType
    remoteId: string
    displayName: string
    metadata?: Json
    credentials?: { token: string }
  },
): Promise<ConnectorAccountView> {
  const id = newId('cac')
  const now = isoAt(ctx.deps)
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('connector_account')
        .values({
          id,
          org_id: actor.orgId,
          connector_type: input.connectorType,
          remote_id: input.remoteId,
          display_name: input.displayName,
          metadata: input.metadata ? JSON.stringify(input.metadata) : null,
          credentials_sealed: sealCredentials(ctx, id, input.credentials),
          status: 'active',
          created_by_member_id: actor.memberId,
          created_at: now,
          updated_at: now,
        })
        .execute()
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_account.created',
        { type: 'connector_account', id },
        { connectorType: input.connectorType, credentials: input.credentials !== undefined },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_account_exists', 'An account of that type with that remote id already exists')
    throw error
  }
  return getAccount(ctx, actor.orgId, id)
}

/** Changes an account's name, metadata or credentials (`credentials: null` removes them). */
export async function updateAccount(
  ctx: AsyncContext,
  actor: Actor,
  id: string,
  input: { displayName?: string; metadata?: Json | null; credentials?: { token: string } | null },
): Promise<ConnectorAccountView> {
  // The answer is read inside the transaction: a read after the commit could fail and turn
  // a change that was made into an error.
  return ctx.deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('connector_account')
      .select('id')
      .where('id', '=', id)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (!row) throw accountNotFound()
    await trx
      .updateTable('connector_account')
      .set({
        ...(input.displayName !== undefined ? { display_name: input.displayName } : {}),
        ...(input.metadata !== undefined ? { metadata: input.metadata ? JSON.stringify(input.metadata) : null } : {}),
        ...(input.credentials !== undefined ? { credentials_sealed: sealCredentials(ctx, id, input.credentials) } : {}),
        updated_at: isoAt(ctx.deps),
      })
      .where('id', '=', id)
      .execute()
    await recordAudit(
      ctx.deps,
      trx,
      actor,
      'connector_account.updated',
      { type: 'connector_account', id },
      { fields: Object.keys(input).sort().join(',') },
    )
    return getAccount({ ...ctx, deps: { ...ctx.deps, db: trx } }, actor.orgId, id)
  })
}

/** Deletes an account with its instances, targets, mappings and sync history. Synced config objects stay. */
export async function deleteAccount(ctx: AsyncContext, actor: Actor, id: string): Promise<void> {
  await ctx.deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('connector_account')
      .select('id')
      .where('id', '=', id)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (!row) throw accountNotFound()
    const instances = await trx
      .selectFrom('connector_instance')
      .select('id')
      .where('connector_account_id', '=', id)
      .execute()
    for (const instance of instances) await dropGrants(trx, 'connector_instance', instance.id)
    await trx.deleteFrom('connector_account').where('id', '=', id).execute()
    await recordAudit(
      ctx.deps,
      trx,
      actor,
      'connector_account.deleted',
      { type: 'connector_account', id },
      { instances: instances.length },
    )
  })
}

/** The instance row, requiring at least `min` on it (404 when invisible, 403 when too low). */
export async function instanceFor(
  ctx: AsyncContext,
  actor: Actor,
  id: string,
  min: GrantRole,
): Promise<ConnectorInstanceTable> {
  await requireRole(ctx.deps.db, actor, 'connector_instance', id, min)
  return ctx.deps.db
    .selectFrom('connector_instance')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', actor.orgId)
    .executeTakeFirstOrThrow()
}

/** Instances the caller can see, in creation order. */
export function listInstances(
  ctx: AsyncContext,
  actor: Actor,
  query: { cursor?: string; limit: number; connectorAccountId?: string; connectorType?: string; status?: string },
): Promise<Page<ConnectorInstanceView>> {
  let q = ctx.deps.db
    .selectFrom('connector_instance')
    .selectAll()
    .where('org_id', '=', actor.orgId)
    .where(visibleCondition(ctx.deps.db, actor, 'connector_instance', 'connector_instance.id'))
  if (query.connectorAccountId) q = q.where('connector_account_id', '=', query.connectorAccountId)
  if (query.connectorType) q = q.where('connector_type', '=', query.connectorType)
  if (query.status) q = q.where('status', '=', query.status)
  return keysetPage(q, {
    scope: 'connector-instances',
    cursor: query.cursor,
    limit: query.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: instanceView,
  })
}

/** Creates an instance of an account (types must agree); the creator becomes its manager. */
export async function createInstance(
  ctx: AsyncContext,
  actor: Actor,
  input: { connectorAccountId: string; connectorType: ConnectorType; name: string; config?: Json },
): Promise<ConnectorInstanceView> {
  const id = newId('cin')
  const now = isoAt(ctx.deps)
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      const account = await trx
        .selectFrom('connector_account')
        .select(['id', 'connector_type'])
        .where('id', '=', input.connectorAccountId)
        .where('org_id', '=', actor.orgId)
        .executeTakeFirst()
      if (!account) throw accountNotFound()
      if (account.connector_type !== input.connectorType) {
        throw controlPlaneError('validation_failed', 'The instance type must match its account', {
          details: {
            issues: [{ path: 'connectorType', message: `must be ${account.connector_type}, the account's type` }],
          },
        })
      }
      await trx
        .insertInto('connector_instance')
        .values({
          id,
          org_id: actor.orgId,
          connector_account_id: account.id,
          connector_type: input.connectorType,
          name: input.name,
          config: input.config ? JSON.stringify(input.config) : null,
          status: 'active',
          last_synced_at: null,
          last_sync_status: null,
          created_by_member_id: actor.memberId,
          created_at: now,
          updated_at: now,
        })
        .execute()
      await grantCreator(ctx.deps, trx, actor, 'connector_instance', id)
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_instance.created',
        { type: 'connector_instance', id },
        { connectorType: input.connectorType },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_instance_exists', 'An instance with that name already exists')
    throw error
  }
  return instanceView(await instanceFor(ctx, actor, id, 'viewer'))
}

/** Changes an instance (editor). A disabled instance cannot sync. */
export async function updateInstance(
  ctx: AsyncContext,
  actor: Actor,
  id: string,
  input: { name?: string; config?: Json | null; status?: 'active' | 'disabled' },
): Promise<ConnectorInstanceView> {
  await instanceFor(ctx, actor, id, 'editor')
  try {
    await ctx.deps.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('connector_instance')
        .set({
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.config !== undefined ? { config: input.config ? JSON.stringify(input.config) : null } : {}),
          ...(input.status !== undefined ? { status: input.status } : {}),
          updated_at: isoAt(ctx.deps),
        })
        .where('id', '=', id)
        .execute()
      await recordAudit(
        ctx.deps,
        trx,
        actor,
        'connector_instance.updated',
        { type: 'connector_instance', id },
        { fields: Object.keys(input).sort().join(',') },
      )
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('connector_instance_exists', 'An instance with that name already exists')
    throw error
  }
  return instanceView(await instanceFor(ctx, actor, id, 'viewer'))
}

/** Deletes an instance (manager) with its targets, mappings and sync history. Synced config objects stay. */
export async function deleteInstance(ctx: AsyncContext, actor: Actor, id: string): Promise<void> {
  await instanceFor(ctx, actor, id, 'manager')
  await ctx.deps.db.transaction().execute(async (trx) => {
    await dropGrants(trx, 'connector_instance', id)
    await trx.deleteFrom('connector_instance').where('id', '=', id).execute()
    await recordAudit(ctx.deps, trx, actor, 'connector_instance.deleted', { type: 'connector_instance', id })
  })
}
