/**
 * Keeps the rate limiter's share current: counts the live control-plane instances on the shared
 * database (the rows instances register and renew, judged as the Worker takeover judges them) on
 * a timer, and drops refilled buckets on the same tick. One small read every few seconds per
 * instance; a failed count keeps the last one.
 * @module
 */
import type { Kysely } from 'kysely'
import type { Logger } from '../../core/logger.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { ControlPlaneInstance } from '../workers/control-plane-instance.ts'
import type { CredentialRateLimiter } from './credential-rate-limiter.ts'

/** Counts the instances `instance` considers live (itself included). */
export async function countLiveInstances(db: Kysely<ControlPlaneDb>, instance: ControlPlaneInstance): Promise<number> {
  const rows = await db.selectFrom('control_plane_instance').selectAll().where('stopped_at', 'is', null).execute()
  let live = rows.some((row) => row.id === instance.id) ? 0 : 1
  for (const row of rows) if (instance.isLive(row)) live++
  return live
}

/** The timer that refreshes the share; `refresh()` runs one count now (tests, start-up). */
export function followInstances(
  db: Kysely<ControlPlaneDb>,
  instance: ControlPlaneInstance,
  limiter: CredentialRateLimiter,
  everyMs: number,
  logger: Logger,
): { refresh(): Promise<void>; stop(): void } {
  let running: Promise<void> | null = null
  const refresh = () =>
    (running ??= countLiveInstances(db, instance)
      .then((count) => limiter.setInstances(count))
      .catch((error) => logger.warn('counting control-plane instances failed', { error: (error as Error).message }))
      .finally(() => {
        running = null
      }))
  const timer = setInterval(() => {
    limiter.sweep()
    void refresh()
  }, everyMs)
  // The timer alone must not keep a process alive that is otherwise done.
  ;(timer as { unref?: () => void }).unref?.()
  return {
    refresh,
    stop: () => clearInterval(timer),
  }
}
