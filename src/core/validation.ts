/**
 * Body and query parsing with valibot, turning every failure into an {@link ApiError} that names
 * each offending field path. Surfaces choose the status and code for validation failures
 * (the workspace surface keeps the reference's 400 `invalid_payload`; the control plane uses 422).
 * @module
 */
import * as v from 'valibot'
import { ApiError } from './errors.ts'
import { issueMessage } from './issue-message.ts'
import { coreError } from './core-errors.ts'
import { jsonDepthExceededAt, MAX_JSON_DEPTH } from './json-depth.ts'

/** How a surface reports schema failures. */
export interface ValidationPolicy {
  status: number
  bodyCode: string
  queryCode: string
  /**
   * Refuse the NUL character (U+0000) in every string of a JSON body (keys too) and every query
   * parameter. Why: PostgreSQL `text` cannot hold it (the driver fails the statement), and no field
   * of the control plane means anything with it; refusing it here, once, keeps both engines alike
   * instead of storing it on SQLite and failing on PostgreSQL.
   */
  refuseNul?: boolean
}

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)'

/** The dot paths of every string (and key) holding U+0000 in a parsed JSON value or query object. */
export function nulPaths(value: unknown, path = '', out: string[] = []): string[] {
  if (typeof value === 'string') {
    if (value.includes('\0')) out.push(path)
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) nulPaths(value[i], path ? `${path}.${i}` : String(i), out)
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key
      if (key.includes('\0')) out.push(at)
      nulPaths(item, at, out)
    }
  }
  return out
}

/** Throws the policy's validation error naming each path in `paths` (none: nothing to refuse). */
export function refuseNulAt(paths: string[], status: number, code: string, what: string): void {
  if (paths.length === 0) return
  const issues = paths.map((path) => ({ path, message: NUL_MESSAGE }))
  const where = paths[0] ? ` at ${paths[0]}` : ''
  const more = paths.length > 1 ? ` (and ${paths.length - 1} more in details.issues)` : ''
  throw new ApiError(status, code, `Invalid ${what}${where}: ${NUL_MESSAGE}${more}`, { details: { issues } })
}

/** One failed field: a dot path (empty for the root) and a readable message. */
export interface FieldIssue {
  path: string
  message: string
}

/**
 * Flattens valibot issues into `{path, message}` pairs, one per failure; with the parsed `schema`,
 * a missing field's message says what it expects and an unknown one lists the known fields.
 */
export function fieldIssues(issues: ReadonlyArray<v.BaseIssue<unknown>>, schema?: v.GenericSchema): FieldIssue[] {
  return issues.map((issue) => ({ path: v.getDotPath(issue) ?? '', message: issueMessage(issue, schema) }))
}

/** Validates `input` against `schema` or throws an ApiError listing each field at fault. */
export function parseWith<S extends v.GenericSchema>(
  schema: S,
  input: unknown,
  status: number,
  code: string,
  what: string,
): v.InferOutput<S> {
  const result = v.safeParse(schema, input)
  if (result.success) return result.output
  const issues = fieldIssues(result.issues, schema)
  const first = issues[0]
  const where = first?.path ? ` at ${first.path}` : ''
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more in details.issues)` : ''
  throw new ApiError(status, code, `Invalid ${what}${where}: ${first?.message ?? 'invalid value'}${more}`, {
    details: { issues },
  })
}

/** The largest JSON body read into memory; larger bodies must use a streaming route. */
export const MAX_JSON_BODY_BYTES = 8 * 1024 * 1024

/** Reads a body as text, refusing (413) once more than `maxBytes` arrive, e.g. a chunked flood. */
export async function readCapped(request: Request, maxBytes: number): Promise<string> {
  if (!request.body) return ''
  const decoder = new TextDecoder()
  let size = 0
  let text = ''
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > maxBytes) {
      throw coreError('payload_too_large', `JSON body exceeds ${maxBytes} bytes`, {
        details: { maxBytes, size },
      })
    }
    text += decoder.decode(chunk, { stream: true })
  }
  return text + decoder.decode()
}

/**
 * Reads a JSON object body. Malformed JSON → 400 `invalid_json`; a valid JSON value that is not an
 * object → 400 with the policy's body code (valibot object schemas would otherwise accept `[]`).
 * An empty body reads as `{}` so routes whose fields are all optional need no body.
 */
export async function readJsonObject(request: Request, policy: ValidationPolicy): Promise<Record<string, unknown>> {
  const length = Number(request.headers.get('content-length') ?? '0')
  if (length > MAX_JSON_BODY_BYTES) {
    throw coreError('payload_too_large', `JSON body exceeds ${MAX_JSON_BODY_BYTES} bytes`, {
      details: { maxBytes: MAX_JSON_BODY_BYTES, size: length },
    })
  }
  const text = await readCapped(request, MAX_JSON_BODY_BYTES)
  if (text.trim() === '') return {}
  // Checked on the text: parsing and validating a deeper value would recurse past the stack.
  const tooDeep = jsonDepthExceededAt(text)
  if (tooDeep >= 0) {
    const message = `nests deeper than ${MAX_JSON_DEPTH} levels`
    throw new ApiError(policy.status, policy.bodyCode, `Invalid request body: ${message}`, {
      details: { maxDepth: MAX_JSON_DEPTH, offset: tooDeep, issues: [{ path: '', message }] },
    })
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw coreError('invalid_json', 'Invalid JSON body')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ApiError(400, policy.bodyCode, 'Request body must be a JSON object')
  }
  // JSON can only carry U+0000 escaped, so a body without the escape needs no walk.
  if (policy.refuseNul && text.includes('\\u0000'))
    refuseNulAt(nulPaths(value), policy.status, policy.bodyCode, 'request body')
  return value as Record<string, unknown>
}

/** Collects URL search params; repeated keys become arrays, like itty-router's `req.query`. */
export function queryObject(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const [key, value] of url.searchParams) {
    const existing = out[key]
    out[key] = existing === undefined ? value : ([] as string[]).concat(existing, value)
  }
  return out
}

// Query strings are text on the wire, so these schemas take strings and document themselves as such
// (JSON Schema generation uses the input type for query parameters).

/** An integer query parameter within bounds, with an optional default. */
export function queryInt(options: { min: number; max: number; default?: number; description?: string }) {
  const base = v.pipe(
    v.string(),
    v.regex(/^-?\d+$/, 'must be an integer'),
    // Documented as the integer it stands for (pattern dropped), so a generated client takes the
    // same number type a response's cursor has (`next`, `cursor`) and can pass it back unchanged.
    v.metadata({
      type: 'integer',
      pattern: undefined,
      minimum: options.min,
      maximum: options.max,
      ...(options.description ? { description: options.description } : {}),
    }),
    v.transform(Number),
    v.number(),
    v.minValue(options.min, `must be at least ${options.min}`),
    v.maxValue(options.max, `must be at most ${options.max}`),
  )
  const described = options.description ? v.pipe(base, v.description(options.description)) : base
  return options.default === undefined ? v.optional(described) : v.optional(described, String(options.default))
}

/** A boolean query parameter: `true|false|1|0`. */
export function queryBool(defaultValue?: boolean) {
  const base = v.pipe(
    v.picklist(['true', 'false', '1', '0']),
    v.transform((s) => s === 'true' || s === '1'),
  )
  return defaultValue === undefined ? v.optional(base) : v.optional(base, defaultValue ? 'true' : 'false')
}

/** A single string query parameter (rejects repeated keys, which would arrive as an array). */
export function queryString(options: { maxLength?: number; default?: string } = {}) {
  const base = v.pipe(v.string('must be given once'), v.maxLength(options.maxLength ?? 2048))
  return options.default === undefined ? v.optional(base) : v.optional(base, options.default)
}
