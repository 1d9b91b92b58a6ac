/**
 * Wire schemas shared by every control-plane family: ids, timestamps and the list/detail
 * envelopes. Response schemas are strict objects so a field added by accident (a hash, a
 * token) fails the contract tests instead of leaking.
 * @module
 */
import * as v from 'valibot'

/** A prefixed, time-sortable id as `newId(prefix)` makes it. */
export function idOf(prefix: string) {
  return v.pipe(
    v.string(),
    v.regex(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`), `must be a ${prefix}_ id`),
    v.description(`${prefix}_ id (sorts by creation time)`),
  )
}

/** Path parameter schema for one id; a malformed id is a 404 like an unknown one. */
export function idParams<K extends string>(...entries: Array<[K, string]>) {
  return v.object(
    Object.fromEntries(entries.map(([name, prefix]) => [name, idOf(prefix)])) as Record<K, ReturnType<typeof idOf>>,
  )
}

/** An ISO-8601 UTC timestamp. */
export const Timestamp = v.pipe(v.string(), v.isoTimestamp(), v.description('ISO-8601 timestamp'))

/** `{items, nextCursor}`: a key-set page. */
export function pageOf<T extends v.GenericSchema>(item: T, title: string) {
  return v.pipe(
    v.strictObject({
      items: v.array(item),
      nextCursor: v.pipe(
        v.nullable(v.string()),
        v.description('Pass back as `cursor` for the next page; null on the last page'),
      ),
    }),
    v.title(title),
  )
}

/** `{item}`: one resource. */
export function itemOf<T extends v.GenericSchema>(item: T, title: string) {
  return v.pipe(v.strictObject({ item }), v.title(title))
}

/** The largest value an `integer` column holds (PostgreSQL's int4; SQLite would take more). */
export const INT_COLUMN_MAX = 2_147_483_647

/**
 * A whole number stored in an `integer` column, `min` … {@link INT_COLUMN_MAX}: refused at the
 * door (422) on both engines alike, instead of a driver error on PostgreSQL only.
 */
export function intColumn(min = 0) {
  return v.pipe(
    v.number(),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(INT_COLUMN_MAX, `must be at most ${INT_COLUMN_MAX}`),
  )
}

/** A trimmed display name. */
export function nameField(max: number) {
  return v.pipe(
    v.string(),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(max, `must be at most ${max} characters`),
  )
}

/** An email address, trimmed and bounded. */
export const EmailField = v.pipe(v.string(), v.trim(), v.maxLength(254), v.email('must be an email address'))
