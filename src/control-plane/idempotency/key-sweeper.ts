/**
 * Deletes expired idempotency keys on every instance, now and then, in bounded batches (see
 * `sweepExpiredKeys`). Several instances sweeping at once only delete the same rows once.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import { startPeriodicTask } from '../../core/periodic-task.ts'
import type { Deps } from '../deps.ts'
import { sweepExpiredKeys } from './idempotency-store.ts'

/** How often each instance sweeps. */
export const SWEEP_INTERVAL_MS = 10 * 60_000

/** Starts sweeping every {@link SWEEP_INTERVAL_MS}; the returned function stops it. */
export function startKeySweeper(deps: Deps, logger: Logger, intervalMs = SWEEP_INTERVAL_MS): () => void {
  return startPeriodicTask(() => sweepExpiredKeys(deps), {
    intervalMs,
    logger,
    failure: 'idempotency key sweep failed',
  })
}
