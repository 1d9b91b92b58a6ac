/**
 * Organization API keys for service integrations. A key acts as the member who created it, with
 * that member's role at creation; it is shown once, stored as a SHA-256 hash, may expire, records
 * when it was last used, and is disabled automatically when its member's role changes or the
 * member is removed (so a demoted admin's automation loses admin rights at once).
 * @module
 */
import type { Kysely } from 'kysely'
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import { isoAt, type Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { asRole, type Role } from '../policy.ts'
import { preparedQuery } from '../prepared-query.ts'
import type { ApiKeyTable, ControlPlaneDb, Db } from '../schema.ts'
import { recordAudit, type Actor } from './audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Every API key starts with this; a bearer token with it is refused (keys go in `x-api-key`). */
export const API_KEY_PREFIX = 'svc_'
/** How many characters of a key are kept to recognise it in lists. */
const START_LENGTH = 10
/** `lastUsedAt` is written at most this often per key, so reads do not become writes. */
const LAST_USED_RESOLUTION_MS = 60_000

/** Why a key stopped working. */
export type DisabledReason = 'role_changed' | 'member_removed' | 'sso_required'

/** An API key as lists show it; never the key or its hash. */
export interface ApiKeyView {
  id: string
  name: string
  start: string
  memberId: string
  userId: string
  role: Role
  status: 'active' | 'expired' | 'disabled'
  disabledReason: DisabledReason | null
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
}

/** What a valid key authenticates as. */
export interface ResolvedApiKey {
  id: string
  orgId: string
  orgName: string
  memberId: string
  role: Role
  user: { id: string; email: string; name: string; created_at: string }
}

const keyLookup = preparedQuery((db: Kysely<ControlPlaneDb>, keyHash: string) =>
  db
    .selectFrom('api_key as k')
    .innerJoin('app_user as u', 'u.id', 'k.user_id')
    .innerJoin('organization as o', 'o.id', 'k.org_id')
    .select([
      'k.id as key_id',
      'k.org_id',
      'k.member_id',
      'k.role',
      'k.expires_at',
      'k.disabled_at',
      'k.last_used_at',
      'o.name as org_name',
      'u.id',
      'u.email',
      'u.name',
      'u.created_at',
    ])
    .where('k.key_hash', '=', keyHash),
)

function view(deps: Deps, row: ApiKeyTable): ApiKeyView {
  const expired = row.expires_at !== null && Date.parse(row.expires_at) <= deps.now()
  return {
    id: row.id,
    name: row.name,
    start: row.start,
    memberId: row.member_id,
    userId: row.user_id,
    role: asRole(row.role),
    status: row.disabled_at ? 'disabled' : expired ? 'expired' : 'active',
    disabledReason: (row.disabled_reason as DisabledReason | null) ?? null,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at,
  }
}

/** Creates a key for the acting member; the plaintext is returned here and never again. */
export async function createApiKey(
  deps: Deps,
  actor: Actor,
  input: { name: string; expiresAt?: string },
): Promise<{ item: ApiKeyView; key: string }> {
  if (input.expiresAt !== undefined && Date.parse(input.expiresAt) <= deps.now()) {
    throw controlPlaneError('validation_failed', 'expiresAt must be in the future', {
      details: {
        issues: [{ path: 'expiresAt', message: 'must be in the future' }],
      },
    })
  }
  const key = generateToken(API_KEY_PREFIX)
  const row: ApiKeyTable = {
    id: newId('key'),
    org_id: actor.orgId,
    member_id: actor.memberId,
    user_id: actor.userId,
    name: input.name,
    start: key.slice(0, START_LENGTH),
    key_hash: hashToken(key),
    role: actor.role,
    created_at: isoAt(deps),
    expires_at: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
    last_used_at: null,
    disabled_at: null,
    disabled_reason: null,
  }
  await deps.db.transaction().execute(async (trx) => {
    await trx.insertInto('api_key').values(row).execute()
    await recordAudit(
      deps,
      trx,
      actor,
      'api_key.created',
      { type: 'api_key', id: row.id },
      { role: row.role, expires: row.expires_at !== null },
    )
  })
  return { item: view(deps, row), key }
}

/** The organization's keys, oldest first. */
export function listApiKeys(
  deps: Deps,
  orgId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<ApiKeyView>> {
  return keysetPage(deps.db.selectFrom('api_key').selectAll().where('org_id', '=', orgId), {
    scope: 'api-keys',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'asc' }],
    map: (row) => view(deps, row),
  })
}

/** Deletes a key of the actor's organization; 404 for any other id. */
export async function revokeApiKey(deps: Deps, actor: Actor, keyId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const deleted = await trx
      .deleteFrom('api_key')
      .where('id', '=', keyId)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) throw controlPlaneError('api_key_not_found', 'API key not found')
    await recordAudit(deps, trx, actor, 'api_key.revoked', { type: 'api_key', id: keyId })
  })
}

/** Disables every enabled key of a member; returns how many. Call inside the role-change or removal transaction. */
export async function disableMemberKeys(
  deps: Deps,
  trx: Db,
  actor: Actor,
  memberId: string,
  reason: DisabledReason,
): Promise<number> {
  const keys = await trx
    .selectFrom('api_key')
    .select('id')
    .where('member_id', '=', memberId)
    .where('disabled_at', 'is', null)
    .execute()
  if (keys.length === 0) return 0
  await trx
    .updateTable('api_key')
    .set({ disabled_at: isoAt(deps), disabled_reason: reason })
    .where('member_id', '=', memberId)
    .where('disabled_at', 'is', null)
    .execute()
  for (const key of keys)
    await recordAudit(deps, trx, actor, 'api_key.disabled', { type: 'api_key', id: key.id }, { reason })
  return keys.length
}

/**
 * Resolves a presented key. Returns the key's identity, or a reason it is not usable
 * (`unknown | expired | disabled`) so the caller can say which without revealing more.
 */
export async function resolveApiKey(
  deps: Deps,
  key: string,
): Promise<ResolvedApiKey | { rejected: 'unknown' | 'expired' | 'disabled' }> {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 256) return { rejected: 'unknown' }
  const [row] = await keyLookup(deps.db, hashToken(key))
  if (!row) return { rejected: 'unknown' }
  const now = deps.now()
  if (row.disabled_at) return { rejected: 'disabled' }
  if (row.expires_at && Date.parse(row.expires_at) <= now) return { rejected: 'expired' }
  if (!row.last_used_at || now - Date.parse(row.last_used_at) >= LAST_USED_RESOLUTION_MS) {
    await deps.db
      .updateTable('api_key')
      .set({ last_used_at: isoAt(deps) })
      .where('id', '=', row.key_id)
      .execute()
  }
  return {
    id: row.key_id,
    orgId: row.org_id,
    orgName: row.org_name,
    memberId: row.member_id,
    role: asRole(row.role),
    user: { id: row.id, email: row.email, name: row.name, created_at: row.created_at },
  }
}
