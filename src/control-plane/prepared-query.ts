/**
 * Queries on the hot path (authentication runs on every request) built and compiled once, then
 * re-run with new parameter values. Building and compiling a kysely query costs more than running
 * a small indexed SQLite lookup, so doing it once per process roughly halves the cost of an
 * authenticated read. The SQL still comes from the query builder for whichever dialect the
 * database uses, so it stays portable.
 *
 * How: the builder is called once with unique sentinel strings as arguments; each compiled
 * parameter equal to a sentinel becomes a slot filled from the call's arguments, and any other
 * parameter (a literal in the builder) is kept. Arguments must therefore reach the query as plain
 * values (not transformed inside the builder), and the query's shape must not depend on them.
 * On SQLite a read runs straight on the read connection (see `directReads`).
 * @module
 */
import type { CompiledQuery, Kysely } from 'kysely'
import type { MaybePromise } from '../core/maybe-promise.ts'
import { directReads } from '../storage/database.ts'

type Slot = { arg: number } | { value: unknown }

interface Prepared<O> {
  compiled: CompiledQuery<O>
  slots: Slot[]
}

/** A query compiled once per database handle and run with positional arguments. */
export function preparedQuery<DB, Args extends unknown[], O>(
  build: (db: Kysely<DB>, ...args: { [K in keyof Args]: Args[K] }) => { compile(): CompiledQuery<O> },
) {
  const cache = new WeakMap<Kysely<DB>, Prepared<O>>()
  const prepare = (db: Kysely<DB>, arity: number): Prepared<O> => {
    const sentinels = Array.from({ length: arity }, (_, i) => `\u0000prepared-arg-${i}\u0000`)
    const compiled = build(db, ...(sentinels as unknown as Args)).compile()
    const slots: Slot[] = compiled.parameters.map((p) => {
      const arg = typeof p === 'string' ? sentinels.indexOf(p) : -1
      return arg >= 0 ? { arg } : { value: p }
    })
    const used = new Set(slots.flatMap((s) => ('arg' in s ? [s.arg] : [])))
    if (used.size !== arity) throw new Error('preparedQuery: every argument must appear as a query parameter')
    return { compiled, slots }
  }
  // Synchronous where the read connection answers directly (SQLite): see core/maybe-promise.ts.
  return (db: Kysely<DB>, ...args: Args): MaybePromise<O[]> => {
    let entry = cache.get(db)
    if (!entry) cache.set(db, (entry = prepare(db, args.length)))
    const parameters = entry.slots.map((s) => ('arg' in s ? args[s.arg] : s.value))
    const direct = directReads(db)
    if (direct) return direct(entry.compiled.sql, parameters) as MaybePromise<O[]>
    return db.executeQuery<O>({ ...entry.compiled, parameters }).then((result) => result.rows)
  }
}
