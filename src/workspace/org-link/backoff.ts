/**
 * Retry pacing of an organization link: capped exponential backoff with jitter, and a sleep the
 * link can cut short (the host asked to sync now, or the link stops).
 * @module
 */

/** Capped exponential backoff with jitter: a random delay between half and all of min(max, initial·2^attempt). */
export function backoffDelay(attempt: number, timing: { backoffInitialMs: number; backoffMaxMs: number }): number {
  const cap = Math.min(timing.backoffMaxMs, timing.backoffInitialMs * 2 ** Math.min(attempt, 30))
  return Math.round(cap / 2 + (Math.random() * cap) / 2)
}

/** A sleep that a `wake()` or an abort ends early. */
export function sleeper() {
  let wake: (() => void) | null = null
  return {
    sleep(ms: number, signal: AbortSignal): Promise<void> {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer)
          signal.removeEventListener('abort', done)
          wake = null
          resolve()
        }
        const timer = setTimeout(done, ms)
        signal.addEventListener('abort', done, { once: true })
        wake = done
      })
    },
    wake: () => wake?.(),
  }
}
