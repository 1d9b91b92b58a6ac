/**
 * Background work repeated on a timer in every instance (sweeps of expired rows): never two runs
 * at once (a slow run skips the ticks it overlaps), a failure logged and retried on the next tick,
 * and timers that never keep the process alive.
 * @module
 */
import type { Logger } from './logger.ts'

/** Runs `work` every `intervalMs` (and once after `firstAfterMs`, when given); returns the stop function. */
export function startPeriodicTask(
  work: () => Promise<unknown>,
  options: { intervalMs: number; firstAfterMs?: number; logger: Logger; failure: string },
): () => void {
  let running: Promise<unknown> | null = null
  const tick = () => {
    if (running) return
    running = work()
      .catch((error: unknown) => options.logger.warn(options.failure, { error: String(error) }))
      .finally(() => {
        running = null
      })
  }
  const first = options.firstAfterMs === undefined ? undefined : setTimeout(tick, options.firstAfterMs)
  const timer = setInterval(tick, options.intervalMs)
  ;(first as { unref?: () => void } | undefined)?.unref?.()
  ;(timer as { unref?: () => void }).unref?.()
  return () => {
    clearTimeout(first)
    clearInterval(timer)
  }
}
