/**
 * An organization's SCIM bearer tokens: the owner creates one per identity provider (the plaintext
 * is answered once, only its SHA-256 is stored), lists them without their secrets, and revokes
 * them. A presented token is found by its hash and then compared in constant time, so neither the
 * lookup nor the comparison reveals how much of a guess was right.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken, secretsEqual } from '../../core/secrets.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { ScimTokenTable } from './scim-tables.ts'

/** Every SCIM token starts with this, so it is recognisable in a secret scanner or a log. */
export const SCIM_TOKEN_PREFIX = 'scim_'
/** Characters of the token kept (and listed) to recognise it. */
const START_LENGTH = 12
/** `last_used_at` is written at most this often per token: a provider's sync is many requests. */
const LAST_USED_RESOLUTION_MS = 60_000
/** Tokens an organization may hold at once (one or two per identity provider is the use). */
export const MAX_SCIM_TOKENS = 20

/** A SCIM token as the API lists it (never the token). */
export interface ScimTokenView {
  id: string
  name: string
  start: string
  createdAt: string
  lastUsedAt: string | null
}

/** The organization and token a valid SCIM token acts for. */
export interface ResolvedScimToken {
  tokenId: string
  orgId: string
  createdByUserId: string | null
}

function view(row: ScimTokenTable): ScimTokenView {
  return { id: row.id, name: row.name, start: row.start, createdAt: row.created_at, lastUsedAt: row.last_used_at }
}

/** Creates a token; the plaintext is in this answer only. */
export async function createScimToken(
  deps: Deps,
  actor: Actor,
  input: { name: string },
): Promise<{ item: ScimTokenView; token: string }> {
  const token = generateToken(SCIM_TOKEN_PREFIX)
  const row: ScimTokenTable = {
    id: newId('sct'),
    org_id: actor.orgId,
    name: input.name,
    start: token.slice(0, START_LENGTH),
    token_hash: hashToken(token),
    created_by_user_id: actor.userId,
    created_at: isoAt(deps),
    last_used_at: null,
  }
  await deps.db.transaction().execute(async (trx) => {
    const held = await trx
      .selectFrom('scim_token')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', actor.orgId)
      .executeTakeFirstOrThrow()
    if (Number(held.n) >= MAX_SCIM_TOKENS)
      throw controlPlaneError('scim_token_limit', `An organization holds at most ${MAX_SCIM_TOKENS} SCIM tokens`)
    await trx.insertInto('scim_token').values(row).execute()
    await recordAudit(deps, trx, actor, 'scim_token.created', { type: 'scim_token', id: row.id })
  })
  return { item: view(row), token }
}

/** The organization's tokens, oldest first (bounded by {@link MAX_SCIM_TOKENS}). */
export async function listScimTokens(deps: Deps, orgId: string): Promise<{ items: ScimTokenView[] }> {
  const rows = await deps.db
    .selectFrom('scim_token')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('id')
    .limit(MAX_SCIM_TOKENS)
    .execute()
  return { items: rows.map(view) }
}

/** Deletes a token of the actor's organization; the next request with it is 401. */
export async function revokeScimToken(deps: Deps, actor: Actor, tokenId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const deleted = await trx
      .deleteFrom('scim_token')
      .where('id', '=', tokenId)
      .where('org_id', '=', actor.orgId)
      .executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) throw controlPlaneError('scim_token_not_found', 'SCIM token not found')
    await recordAudit(deps, trx, actor, 'scim_token.revoked', { type: 'scim_token', id: tokenId })
  })
}

/** The organization a presented token acts for, or null for an unknown (or revoked) one. */
export async function resolveScimToken(deps: Deps, token: string): Promise<ResolvedScimToken | null> {
  if (!token.startsWith(SCIM_TOKEN_PREFIX) || token.length > 256) return null
  const hash = hashToken(token)
  const row = await deps.db
    .selectFrom('scim_token')
    .select(['id', 'org_id', 'token_hash', 'created_by_user_id', 'last_used_at'])
    .where('token_hash', '=', hash)
    .executeTakeFirst()
  if (!row || !secretsEqual(row.token_hash, hash)) return null
  const now = deps.now()
  if (!row.last_used_at || now - Date.parse(row.last_used_at) >= LAST_USED_RESOLUTION_MS)
    await deps.db
      .updateTable('scim_token')
      .set({ last_used_at: isoAt(deps) })
      .where('id', '=', row.id)
      .execute()
  return { tokenId: row.id, orgId: row.org_id, createdByUserId: row.created_by_user_id }
}
