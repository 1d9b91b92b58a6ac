/**
 * A FIFO async mutex. Each workspace has one: server writes (re-check, apply, record) and the
 * watcher's rescans take it, so a rescan never sees a half-finished server write and reports it
 * as an outside change, and two writes to one config file never interleave read-modify-write.
 * @module
 */

/** A mutual-exclusion lock for async work. */
export class AsyncLock {
  #tail: Promise<unknown> = Promise.resolve()

  /** Runs `fn` once every earlier holder has finished. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.#tail.then(fn)
    this.#tail = result.catch(() => {})
    return result
  }
}
