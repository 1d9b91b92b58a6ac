/**
 * Readable messages for valibot issues. valibot's defaults ("Invalid key: Expected \"name\" but
 * received undefined") name neither the field nor what would be accepted in plain words; these say
 * "required, expected string" or "unknown field, expected one of: name, sourceMode". Messages a
 * schema sets itself ("must be kebab-case") are kept as written.
 * @module
 */
import type * as v from 'valibot'

/** valibot's default message shape: `Invalid <what>: Expected <expected> but received <received>`. */
const DEFAULT_MESSAGE = /^Invalid ([\w ]+): Expected ([\s\S]*) but received ([\s\S]*)$/

/** Field lists in messages stop here; the schema in the OpenAPI document has the rest. */
const MAX_LISTED_KEYS = 20
/** Received values are quoted back up to this many characters. */
const MAX_RECEIVED = 60

// deno-lint-ignore no-explicit-any
type AnySchema = any

/** Unwraps optional/nullable/default wrappers; piped schemas already carry their first schema's fields. */
function unwrap(schema: AnySchema): AnySchema {
  let current = schema
  while (current?.wrapped) current = current.wrapped
  return current
}

/** The schema at `keys` below `root`, following objects, arrays, records and the options of unions. */
function schemaAt(root: AnySchema, keys: ReadonlyArray<unknown>): AnySchema {
  let current = unwrap(root)
  for (const key of keys) {
    if (!current) return undefined
    if (current.entries) current = current.entries[key as string]
    else if (current.item) current = current.item
    else if (current.value && current.type === 'record') current = current.value
    else if (Array.isArray(current.options))
      current = current.options.map((option: AnySchema) => unwrap(option)?.entries?.[key as string]).find(Boolean)
    else return undefined
    current = unwrap(current)
  }
  return current
}

function clip(text: string): string {
  return text.length > MAX_RECEIVED ? `${text.slice(0, MAX_RECEIVED)}…` : text
}

/**
 * The message for one issue, without its path (callers show the path beside it). `root` is the
 * schema that was parsed, used to say what a missing field expects and which fields are known.
 */
export function issueMessage(issue: v.BaseIssue<unknown>, root?: v.GenericSchema): string {
  const match = DEFAULT_MESSAGE.exec(issue.message)
  if (!match) return issue.message
  const [, what, expected, received] = match as unknown as [string, string, string, string]
  const keys = (issue.path ?? []).map((item) => item.key)
  if (what === 'key' && expected === 'never') {
    const known = Object.keys(schemaAt(root, keys.slice(0, -1))?.entries ?? {})
    if (!known.length) return 'unknown field, not allowed here'
    const listed = known.slice(0, MAX_LISTED_KEYS).join(', ')
    return `unknown field, expected one of: ${listed}${known.length > MAX_LISTED_KEYS ? ', …' : ''}`
  }
  if (received === 'undefined') {
    const expects = what === 'key' ? schemaAt(root, keys)?.expects : expected
    return expects ? `required, expected ${expects}` : 'required'
  }
  if (what === 'type') return `expected ${expected}, received ${clip(received)}`
  return `expected ${what} ${expected}, received ${clip(received)}`
}
