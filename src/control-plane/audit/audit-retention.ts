/**
 * Audit retention: events older than `auditRetentionDays` (`SERVICE_AUDIT_RETENTION_DAYS`, default
 * {@link DEFAULT_AUDIT_RETENTION_DAYS}) are deleted by every instance now and then, in bounded
 * batches, so a large backlog never holds a long lock. Several instances sweeping at once delete
 * the same rows once: each statement deletes whatever is still there.
 * @module
 */
import { sql } from 'kysely'
import type { Logger } from '../../core/logger.ts'
import { startPeriodicTask } from '../../core/periodic-task.ts'
import { isoAt, type Deps } from '../deps.ts'

/** Days an audit event is kept by default. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365

/** How often each instance sweeps. */
export const AUDIT_SWEEP_INTERVAL_MS = 60 * 60_000

/**
 * Deletes events older than `retentionDays`, `batch` rows per statement and at most `maxBatches`
 * statements per call; returns how many were deleted.
 */
export async function sweepOldAuditEvents(
  deps: Deps,
  retentionDays: number,
  batch = 1000,
  maxBatches = 50,
): Promise<number> {
  const cutoff = isoAt(deps, -retentionDays * 24 * 3600_000)
  let total = 0
  for (let round = 0; round < maxBatches; round++) {
    const result = await deps.db
      .deleteFrom('audit_event')
      .where(
        sql<boolean>`id in (select id from audit_event where created_at < ${cutoff} order by created_at limit ${batch})`,
      )
      .executeTakeFirst()
    const deleted = Number(result.numDeletedRows)
    total += deleted
    if (deleted < batch) break
  }
  return total
}

/** Sweeps once soon after start, then every `intervalMs`; the returned function stops it. */
export function startAuditSweeper(
  deps: Deps,
  logger: Logger,
  retentionDays: number,
  intervalMs = AUDIT_SWEEP_INTERVAL_MS,
): () => void {
  const sweep = async () => {
    const deleted = await sweepOldAuditEvents(deps, retentionDays)
    if (deleted > 0) logger.info('old audit events deleted', { deleted, retentionDays })
  }
  return startPeriodicTask(sweep, { intervalMs, firstAfterMs: 30_000, logger, failure: 'audit retention sweep failed' })
}
