/**
 * A Worker's runtime as a caller: its current activity token (`wka_…`) names the Worker, so the
 * runtime can read its own delivered set and follow its delivery events with the credential it
 * was started with, without a person signing it in.
 * @module
 */
import { hashToken, secretsEqual } from '../../core/secrets.ts'
import type { Db } from '../schema.ts'

/** The prefix of Worker activity tokens. */
export const WORKER_ACTIVITY_PREFIX = 'wka_'

/** A Worker calling with its activity token. */
export interface WorkerPrincipal {
  id: string
  name: string
  orgId: string
  orgName: string
  tokenId: string
}

/** The Worker whose current (unrevoked) activity token this is, or null. */
export async function resolveWorkerToken(db: Db, token: string): Promise<WorkerPrincipal | null> {
  const hash = hashToken(token)
  const row = await db
    .selectFrom('worker_token as t')
    .innerJoin('worker as w', 'w.id', 't.worker_id')
    .innerJoin('organization as o', 'o.id', 'w.org_id')
    .select(['t.id as token_id', 't.token_hash', 'w.id', 'w.name', 'w.org_id', 'o.name as org_name'])
    .where('t.token_hash', '=', hash)
    .where('t.scope', '=', 'activity')
    .where('t.revoked_at', 'is', null)
    .executeTakeFirst()
  if (!row || !secretsEqual(row.token_hash, hash)) return null
  return { id: row.id, name: row.name, orgId: row.org_id, orgName: row.org_name, tokenId: row.token_id }
}

/** True while the token still names the Worker (open feeds re-check it on every read). */
export async function workerTokenActive(db: Db, worker: WorkerPrincipal): Promise<boolean> {
  const row = await db
    .selectFrom('worker_token')
    .select('id')
    .where('id', '=', worker.tokenId)
    .where('worker_id', '=', worker.id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return row !== undefined
}
