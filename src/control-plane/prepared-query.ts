/**
 * Queries on the hot path (authentication runs on every request) built and compiled once, then
 * re-run with new parameter values. Building and compiling a kysely query costs more than running
 * a small indexed SQLite lookup, so doing it once per process roughly halves the cost of an
 * authenticated read. The SQL still comes from the query builder for whichever dialect the
 * database uses, so it stays portable.
 *
 * How: sentinel slots (`sentinel-slots.ts`): arguments must reach the query as plain values (not
 * transformed inside the builder), and the query's shape must not depend on them. On SQLite a read
 * runs straight on the read connection (see `directReads`).
 * @module
 */
import type { CompiledQuery, Kysely } from 'kysely'
import type { MaybePromise } from '../core/maybe-promise.ts'
import { requireSlots, runSlotted, sentinel, type SlottedQuery, slotted } from './sentinel-slots.ts'

/** A query compiled once per database handle and run with positional arguments. */
export function preparedQuery<DB, Args extends unknown[], O>(
  build: (db: Kysely<DB>, ...args: { [K in keyof Args]: Args[K] }) => { compile(): CompiledQuery<O> },
) {
  const cache = new WeakMap<Kysely<DB>, SlottedQuery>()
  const prepare = (db: Kysely<DB>, arity: number): SlottedQuery => {
    const names = Array.from({ length: arity }, (_, i) => sentinel(`arg-${i}`))
    const query = slotted(build(db, ...(names as unknown as Args)).compile(), names)
    requireSlots(query, names, () => 'preparedQuery: every argument must appear as a query parameter')
    return query
  }
  // Synchronous where the read connection answers directly (SQLite): see core/maybe-promise.ts.
  return (db: Kysely<DB>, ...args: Args): MaybePromise<O[]> => {
    let query = cache.get(db)
    if (!query) cache.set(db, (query = prepare(db, args.length)))
    return runSlotted<O>(db, query, args)
  }
}
