/**
 * A small, seeded, schema-driven fuzzer: walks the OpenAPI document a surface serves and builds,
 * per operation, hostile variants of each input (deep nesting, numbers past every column type,
 * NUL and odd Unicode, wrong types, oversized strings, arrays for objects), starting from a minimal
 * valid-looking request. The suites send them through the real listener and router with valid
 * credentials and fail on any 500, or any other 5xx the operation does not document.
 * Deterministic: the same seed gives the same requests, so a failure names a reproducible case.
 * @module
 */

/** One request to send. */
export interface FuzzCase {
  operationId: string
  method: string
  /** Path with its parameters filled (percent-encoded), plus the query string. */
  target: string
  /** JSON text of the body, when the operation takes one. */
  body?: string
  /** What was made hostile, for the failure message. */
  what: string
  /** 5xx statuses the operation documents (a 503 `database_unavailable`, a 502 from a proxy). */
  documented5xx: number[]
}

type Schema = Record<string, unknown>
type Doc = {
  paths: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema> }
}
interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required?: boolean
  schema?: Schema
}
interface Operation {
  operationId: string
  parameters?: Parameter[]
  requestBody?: { content?: Record<string, { schema?: Schema }> }
  responses?: Record<string, unknown>
}

/** mulberry32: a tiny seeded generator, enough to pick variants reproducibly. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function nest(levels: number): unknown {
  let value: unknown = 1
  for (let i = 0; i < levels; i++) value = { a: value }
  return value
}

/** Hostile values for any field, each with a label. */
export const HOSTILE_VALUES: ReadonlyArray<[string, unknown]> = [
  ['nul', 'a\u0000b'],
  ['lone surrogate', 'x\uD800y'],
  ['bidi and emoji', '\u202E\u{1F600}\uFEFF\u0301'],
  ['oversized string', 'x'.repeat(70_000)],
  ['huge number', 1e308],
  ['negative', -1],
  ['beyond int32', 2 ** 31],
  ['beyond safe integer', 2 ** 53 + 2],
  ['fraction', 1.5],
  ['zero', 0],
  ['wrong type: object', { a: 1 }],
  ['wrong type: array of objects', [{}]],
  ['wrong type: boolean', true],
  ['null', null],
  ['empty string', ''],
  ['nested 70 deep', nest(70)],
  ['nested 100 deep', nest(100)],
  ['path traversal', '../../etc/passwd'],
]

/** Hostile query or path values (text on the wire), each with a label. */
export const HOSTILE_TEXT: ReadonlyArray<[string, string]> = [
  ['nul', 'a\u0000b'],
  ['lone surrogate', '%ED%A0%80'],
  ['bidi', '\u202E\u{1F600}'],
  ['oversized', 'x'.repeat(9000)],
  ['beyond int32', String(2 ** 31)],
  ['huge', '1e308'],
  ['negative', '-1'],
  ['fraction', '1.5'],
  ['dot segments', '../..'],
  ['json', '{"a":[1]}'],
]

function resolve(doc: Doc, schema: Schema | undefined, depth = 0): Schema {
  if (!schema || depth > 20) return {}
  const ref = schema.$ref
  if (typeof ref === 'string') {
    const name = ref.split('/').at(-1)!
    return resolve(doc, doc.components?.schemas?.[name], depth + 1)
  }
  return schema
}

/** A minimal value the schema accepts as far as types go (required fields only). */
function minimal(doc: Doc, raw: Schema | undefined, depth = 0): unknown {
  const schema = resolve(doc, raw)
  if (depth > 8) return null
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  if (alternatives?.length)
    return minimal(doc, alternatives.find((s) => resolve(doc, s).type !== 'null') ?? alternatives[0], depth + 1)
  if (Array.isArray(schema.allOf) && schema.allOf.length) return minimal(doc, schema.allOf[0] as Schema, depth + 1)
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  switch (type) {
    case 'string': {
      const min = typeof schema.minLength === 'number' ? schema.minLength : 1
      return 'x'.repeat(Math.max(1, Math.min(min, 64)))
    }
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1
    case 'boolean':
      return true
    case 'array':
      return []
    case 'object':
    case undefined: {
      const out: Record<string, unknown> = {}
      const properties = (schema.properties ?? {}) as Record<string, Schema>
      for (const key of (schema.required ?? []) as string[]) out[key] = minimal(doc, properties[key], depth + 1)
      return out
    }
    default:
      return null
  }
}

/** The field paths of an object schema worth making hostile: its properties and theirs, two levels. */
function fieldPaths(doc: Doc, raw: Schema | undefined, prefix: string[] = [], depth = 0): string[][] {
  const schema = resolve(doc, raw)
  const properties = (schema.properties ?? {}) as Record<string, Schema>
  const out: string[][] = []
  for (const [key, child] of Object.entries(properties)) {
    out.push([...prefix, key])
    if (depth < 1 && resolve(doc, child).type === 'object')
      out.push(...fieldPaths(doc, child, [...prefix, key], depth + 1))
  }
  return out
}

function withValue(base: unknown, path: string[], value: unknown): unknown {
  const root = structuredClone(base) as Record<string, unknown>
  let at = root
  for (const key of path.slice(0, -1)) {
    if (!at[key] || typeof at[key] !== 'object' || Array.isArray(at[key])) at[key] = {}
    at = at[key] as Record<string, unknown>
  }
  at[path.at(-1)!] = value
  return root
}

function pick<T>(random: () => number, list: ReadonlyArray<T>, count: number): T[] {
  const copy = [...list]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
  }
  return copy.slice(0, count)
}

/** Options for {@link fuzzCases}. */
export interface FuzzOptions {
  seed: number
  /** Values for path parameters by name (real ids reach deeper than 404s); others get a placeholder. */
  pathValues?: Record<string, string>
  /** Operations left out (by operationId), e.g. ones that end the fuzzer's own credential. */
  skip?: (operationId: string, path: string, method: string) => boolean
  /** Hostile variants per input field (default 4, picked by the seed); NUL and 100-deep nesting always. */
  perField?: number
}

/** Every hostile request for every operation of `doc`. */
export function fuzzCases(doc: Doc, options: FuzzOptions): FuzzCase[] {
  const random = seeded(options.seed)
  const perField = options.perField ?? 4
  const cases: FuzzCase[] = []
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (options.skip?.(op.operationId, template, method.toUpperCase())) continue
      const documented5xx = Object.keys(op.responses ?? {})
        .map(Number)
        .filter((status) => status > 500 && status < 600)
      const params = op.parameters ?? []
      const pathValue = (name: string) =>
        options.pathValues?.[name] ?? `${name.replace(/Id$/, '')}_0000000000000000000000fuzz`
      const fill = (override?: [string, string]) =>
        template.replace(/\{([^}]+)\}/g, (_, name: string) =>
          encodeURIComponent(override && override[0] === name ? override[1] : pathValue(name)),
        )
      const queryBase = params.filter((p) => p.in === 'query' && p.required)
      const baseQuery = new URLSearchParams(queryBase.map((p) => [p.name, String(minimal(doc, p.schema))]))
      const schema = op.requestBody?.content?.['application/json']?.schema
      const baseBody = schema ? minimal(doc, schema) : undefined
      const body = baseBody === undefined ? undefined : JSON.stringify(baseBody)
      const add = (what: string, target: string, text = body) =>
        cases.push({
          operationId: op.operationId,
          method: method.toUpperCase(),
          target,
          body: text,
          what,
          documented5xx,
        })
      const query = (q: URLSearchParams) => (q.size ? `?${q}` : '')

      for (const p of params.filter((p) => p.in === 'path')) {
        for (const [label, value] of [HOSTILE_TEXT[0]!, ...pick(random, HOSTILE_TEXT.slice(1), 2)])
          add(`path ${p.name}: ${label}`, fill([p.name, value]) + query(baseQuery))
      }
      for (const p of params.filter((p) => p.in === 'query')) {
        for (const [label, value] of [HOSTILE_TEXT[0]!, ...pick(random, HOSTILE_TEXT.slice(1), perField - 1)]) {
          const q = new URLSearchParams(baseQuery)
          q.set(p.name, value)
          add(`query ${p.name}: ${label}`, fill() + query(q))
        }
        const repeated = new URLSearchParams(baseQuery)
        repeated.append(p.name, '1')
        repeated.append(p.name, '2')
        add(`query ${p.name}: repeated`, fill() + query(repeated))
      }
      if (baseBody !== undefined) {
        const target = fill() + query(baseQuery)
        add('body: minimal', target)
        add('body: nested 100 deep', target, JSON.stringify({ ...(baseBody as object), deep: nest(100) }))
        add('body: an array', target, '[{}]')
        add('body: NUL key', target, JSON.stringify({ ...(baseBody as object), 'k\u0000': 1 }))
        const isAlways = (label: string) => label === 'nul' || label === 'nested 100 deep'
        const always = HOSTILE_VALUES.filter(([label]) => isAlways(label))
        const rest = HOSTILE_VALUES.filter(([label]) => !isAlways(label))
        for (const field of fieldPaths(doc, schema)) {
          for (const [label, value] of [...always, ...pick(random, rest, perField)])
            add(`body ${field.join('.')}: ${label}`, target, JSON.stringify(withValue(baseBody, field, value)))
        }
      }
    }
  }
  return cases
}

/** A case that broke the rule, as a failure line. */
export interface FuzzFailure {
  case: FuzzCase
  status: number
  body: string
}

/** Sends every case to `baseUrl` with `headers`, a few at a time; returns the 5xx answers the rule forbids. */
export async function runFuzzCases(
  baseUrl: string,
  cases: FuzzCase[],
  headers: Record<string, string>,
  concurrency = 4,
): Promise<{ failures: FuzzFailure[]; statuses: Map<number, number> }> {
  const failures: FuzzFailure[] = []
  const statuses = new Map<number, number>()
  let next = 0
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!
      const res = await fetch(`${baseUrl}${c.target}`, {
        method: c.method,
        headers: { ...headers, ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: c.body,
      })
      const text = await res.text()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      if (res.status === 500 || (res.status > 500 && !c.documented5xx.includes(res.status)))
        failures.push({ case: c, status: res.status, body: text.slice(0, 300) })
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { failures, statuses }
}

/** Failures as readable lines for an assertion message. */
export function describeFailures(failures: FuzzFailure[]): string {
  return failures
    .slice(0, 15)
    .map((f) => `${f.status} ${f.case.method} ${f.case.target.slice(0, 120)} [${f.case.what}] ${f.body}`)
    .join('\n')
}
