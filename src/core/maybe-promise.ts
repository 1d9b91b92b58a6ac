/**
 * Values that are ready now or later. Why: on SQLite the hottest reads (the session lookup on every
 * request) answer synchronously, and a request that never waits skips a promise and a microtask per
 * step (an authenticated read answered without one is about a fifth faster over HTTP). Code on that
 * path returns a {@link MaybePromise} and chains with {@link andThen} instead of `await`.
 * @module
 */

/** A value now, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>

/** `next(value)`, now when `value` is ready, else once it settles (a rejection passes through). */
export function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value)
}
