/**
 * The mechanism behind every query the control plane compiles once and re-runs (`preparedQuery`,
 * `preparedPage`, `preparedVisiblePage`): the builder runs once with unique sentinel strings in
 * place of the values; each compiled parameter equal to a sentinel becomes a slot filled from the
 * call's arguments, and any other parameter (a literal in the builder) is kept. Values must reach
 * the query as plain parameters, untransformed, and the SQL's shape must not depend on them.
 * @module
 */
import type { CompiledQuery, Kysely } from 'kysely'
import type { MaybePromise } from '../core/maybe-promise.ts'
import { directReads } from '../storage/database.ts'

type Slot = { arg: number } | { value: unknown }

/** A compiled query whose parameters are argument slots or kept literals. */
export interface SlottedQuery {
  compiled: CompiledQuery
  slots: Slot[]
}

/** A sentinel value, unique to `name`, that no real argument can equal. */
export function sentinel(name: string): string {
  return `\u0000prepared-${name}\u0000`
}

/**
 * `compiled` with each parameter equal to `names[i]` as slot `i` (an `undefined` name is an absent
 * optional value, passed as `undefined` to the builder and never a slot).
 */
export function slotted(compiled: CompiledQuery, names: ReadonlyArray<string | undefined>): SlottedQuery {
  const positions = new Map<unknown, number>()
  names.forEach((name, i) => {
    if (name !== undefined) positions.set(name, i)
  })
  return {
    compiled,
    slots: compiled.parameters.map((p) => {
      const arg = positions.get(p)
      return arg === undefined ? { value: p } : { arg }
    }),
  }
}

/** Throws `message(i)` unless every present name `i` reached the query as a parameter. */
export function requireSlots(
  query: SlottedQuery,
  names: ReadonlyArray<string | undefined>,
  message: (i: number) => string,
): void {
  const used = new Set(query.slots.flatMap((s) => ('arg' in s ? [s.arg] : [])))
  names.forEach((name, i) => {
    if (name !== undefined && !used.has(i)) throw new Error(message(i))
  })
}

/** The query's parameters for `args` (indexed like the names it was slotted with). */
export function fillSlots(query: SlottedQuery, args: ReadonlyArray<unknown>): unknown[] {
  return query.slots.map((s) => ('arg' in s ? args[s.arg] : s.value))
}

/**
 * Runs a slotted select with `args`. Synchronous where the read connection answers directly
 * (SQLite, see `directReads` and core/maybe-promise.ts); through kysely's executor otherwise.
 */
export function runSlotted<R>(db: Kysely<any>, query: SlottedQuery, args: ReadonlyArray<unknown>): MaybePromise<R[]> {
  const parameters = fillSlots(query, args)
  const direct = directReads(db)
  if (direct) return direct(query.compiled.sql, parameters) as MaybePromise<R[]>
  return db.executeQuery<R>({ ...query.compiled, parameters } as CompiledQuery<R>).then((result) => result.rows)
}

/** Distinct shapes kept per database handle; past it a cache starts over (shapes rarely vary that much). */
const MAX_SHAPES = 256

/** Prepared forms per database handle and shape key, made on first use. */
export function shapeCache<T>(): (db: Kysely<any>, key: string, make: () => T) => T {
  const cache = new WeakMap<Kysely<any>, Map<string, T>>()
  return (db, key, make) => {
    let shapes = cache.get(db)
    if (!shapes) cache.set(db, (shapes = new Map()))
    let entry = shapes.get(key)
    if (entry === undefined) {
      if (shapes.size >= MAX_SHAPES) shapes.clear()
      shapes.set(key, (entry = make()))
    }
    return entry
  }
}
