/**
 * The protocol pieces shared by SCIM Users and Groups (RFC 7644): the request body (media type,
 * size and JSON checks), the one filter form this service answers (`attribute eq "value"`),
 * `startIndex`/`count` paging, PATCH operations read into `{op, path, value}` triples, weak ETags
 * and `If-Match`.
 * @module
 */
import { sha256Hex } from '../../core/sha256.ts'
import { jsonDepthExceededAt } from '../../core/json-depth.ts'
import { scimError, scimStatusError } from './scim-error.ts'

/** Largest SCIM request body (a Group replaced with its full member list is the largest). */
export const MAX_SCIM_BODY_BYTES = 1024 * 1024
/** Resources answered per list page at most (`count` above it is lowered to it, RFC 7644 §3.4.2.4). */
export const MAX_SCIM_COUNT = 200
/** PATCH operations per request, and member values per operation, at most. */
export const MAX_SCIM_OPERATIONS = 100
export const MAX_SCIM_MEMBERS = 1000
/** Longest filter expression accepted. */
const MAX_FILTER_LENGTH = 1024

/** The PATCH request schema. */
export const PATCH_OP_URN = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
/** The list response schema. */
export const LIST_RESPONSE_URN = 'urn:ietf:params:scim:api:messages:2.0:ListResponse'

/** The request body as bytes (at most {@link MAX_SCIM_BODY_BYTES}); 415 for a media type other than SCIM's or JSON. */
export async function readScimBytes(request: Request): Promise<Uint8Array> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/scim+json' && type !== 'application/json')
    throw scimStatusError(415, 'Send the body as application/scim+json (or application/json)')
  const declared = Number(request.headers.get('content-length') ?? '0')
  const tooLarge = () => scimStatusError(413, `The body is over ${MAX_SCIM_BODY_BYTES} bytes`)
  if (declared > MAX_SCIM_BODY_BYTES) throw tooLarge()
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > MAX_SCIM_BODY_BYTES) {
      await request.body.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(chunk)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/** The body as a JSON object; 400 `invalidSyntax` otherwise. */
export async function readScimObject(request: Request): Promise<Record<string, unknown>> {
  const text = new TextDecoder().decode(await readScimBytes(request))
  if (jsonDepthExceededAt(text) >= 0) throw scimError('invalidSyntax', 'The body nests too deeply')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw scimError('invalidSyntax', 'The body is not valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw scimError('invalidSyntax', 'The body must be a JSON object')
  if (text.includes('\\u0000')) throw scimError('invalidValue', 'Strings cannot contain U+0000')
  return value as Record<string, unknown>
}

/** A filter this service answers: one attribute compared for equality. */
export interface ScimFilter {
  attribute: string
  value: string
}

const FILTER = /^\s*([A-Za-z][\w:.]*)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$/i

/**
 * Reads `attribute eq "value"` with `attribute` one of `allowed` (case-insensitive, optionally
 * prefixed with its schema URN); anything else is 400 `invalidFilter`.
 */
export function parseFilter(filter: string | null, allowed: readonly string[]): ScimFilter | null {
  if (filter === null || filter.trim() === '') return null
  const refuse = () =>
    scimError('invalidFilter', `Supported filters: ${allowed.map((a) => `${a} eq "value"`).join(', ')}`)
  if (filter.length > MAX_FILTER_LENGTH) throw refuse()
  const match = FILTER.exec(filter)
  if (!match) throw refuse()
  const name = match[1]!.slice(match[1]!.lastIndexOf(':') + 1).toLowerCase()
  const attribute = allowed.find((a) => a.toLowerCase() === name)
  if (!attribute) throw refuse()
  let value: string
  try {
    value = JSON.parse(`"${match[2]}"`) as string
  } catch {
    throw refuse()
  }
  return { attribute, value }
}

/** `startIndex` (1-based) and `count` of a list request, within bounds. */
export function pageOf(url: URL): { startIndex: number; count: number } {
  const int = (name: string, fallback: number) => {
    const raw = url.searchParams.get(name)
    if (raw === null || raw.trim() === '') return fallback
    const n = Number(raw)
    if (!Number.isInteger(n)) throw scimError('invalidValue', `${name} must be an integer`)
    return n
  }
  // RFC 7644 §3.4.2.4: a startIndex below 1 is read as 1, a negative count as 0.
  const startIndex = Math.min(Math.max(int('startIndex', 1), 1), 2 ** 31 - 1)
  const count = Math.min(Math.max(int('count', MAX_SCIM_COUNT), 0), MAX_SCIM_COUNT)
  return { startIndex, count }
}

/** A list response page. */
export function listResponse(resources: unknown[], totalResults: number, startIndex: number): Record<string, unknown> {
  return {
    schemas: [LIST_RESPONSE_URN],
    totalResults,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  }
}

/** One PATCH operation, its `op` lower-cased. */
export interface PatchOperation {
  op: 'add' | 'replace' | 'remove'
  path: string | null
  value: unknown
}

/** The operations of a PATCH body (RFC 7644 §3.5.2); `op` names are case-insensitive (Entra sends `Replace`). */
export function patchOperations(body: Record<string, unknown>): PatchOperation[] {
  const schemas = body.schemas
  if (schemas !== undefined && !(Array.isArray(schemas) && schemas.includes(PATCH_OP_URN)))
    throw scimError('invalidSyntax', `A PATCH body names the schema ${PATCH_OP_URN}`)
  const operations = body.Operations ?? body.operations
  if (!Array.isArray(operations) || operations.length === 0)
    throw scimError('invalidSyntax', 'A PATCH body has a non-empty Operations array')
  if (operations.length > MAX_SCIM_OPERATIONS)
    throw scimError('tooMany', `At most ${MAX_SCIM_OPERATIONS} operations per request`)
  return operations.map((raw) => {
    if (typeof raw !== 'object' || raw === null) throw scimError('invalidSyntax', 'Each operation is an object')
    const { op, path, value } = raw as Record<string, unknown>
    const name = typeof op === 'string' ? op.toLowerCase() : ''
    if (name !== 'add' && name !== 'replace' && name !== 'remove')
      throw scimError('invalidSyntax', 'op is one of add, replace, remove')
    if (path !== undefined && path !== null && (typeof path !== 'string' || path.length > 512))
      throw scimError('invalidPath', 'path is a string')
    const trimmed = typeof path === 'string' && path.trim() !== '' ? path.trim() : null
    if (name === 'remove' && trimmed === null) throw scimError('noTarget', 'A remove operation names its path')
    if (name !== 'remove' && value === undefined) throw scimError('invalidValue', `An ${name} operation has a value`)
    return { op: name, path: trimmed, value }
  })
}

/** A boolean as SCIM clients send it: `true`, or the string `"True"`/`"False"` (Microsoft Entra). */
export function scimBoolean(value: unknown, name: string): boolean {
  if (typeof value === 'boolean') return value
  if (typeof value === 'string') {
    const lower = value.trim().toLowerCase()
    if (lower === 'true') return true
    if (lower === 'false') return false
  }
  throw scimError('invalidValue', `${name} must be a boolean`)
}

/** A bounded string, or null for null/absent; 400 `invalidValue` otherwise. */
export function optionalString(value: unknown, name: string, max: number): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string' || value.length > max)
    throw scimError('invalidValue', `${name} must be a string of at most ${max} characters`)
  return value.trim() === '' ? null : value
}

/** The weak ETag of a resource as rendered (without its meta): changes whenever anything shown changes. */
export function versionOf(resource: Record<string, unknown>): string {
  return `W/"${sha256Hex(JSON.stringify(resource)).slice(0, 24)}"`
}

/** 412 unless `If-Match` (when sent) names `version` or `*`. */
export function checkIfMatch(request: Request, version: string): void {
  const header = request.headers.get('if-match')
  if (header === null) return
  const tags = header.split(',').map((t) => t.trim())
  if (tags.includes('*') || tags.includes(version) || tags.includes(version.slice(2))) return
  throw scimStatusError(412, 'The resource changed since that version was read')
}
