/**
 * A test client that holds the server to its contract: every response it receives is checked
 * against the route that answered (matched by method and path from the same declarations the
 * router and `/openapi.json` are built from): the status must be one the route declares, a
 * documented body must parse with the declared valibot schema for that status (strict objects,
 * so an undeclared field fails), an error must be `{code, message, details?}` JSON, and a 204
 * must be empty. Any mismatch throws {@link ContractViolation}, so a test cannot pass on a
 * response the contract does not allow.
 *
 * Generic over the surface's rule and principal types so later control-plane families reuse it.
 * @module
 */
import * as v from 'valibot'
import { impliedErrorStatuses, type SurfaceAuth } from '../../core/http-app.ts'
import { ErrorBodySchema } from '../../core/openapi.ts'
import { describeResponse, type AnyRoute } from '../../core/route.ts'
import type { ValidationPolicy } from '../../core/validation.ts'

/** A response that broke the declared contract. */
export class ContractViolation extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ContractViolation'
  }
}

/** What the client needs from a surface. */
export interface ContractSource<Rule> {
  fetch(request: Request): Response | Promise<Response>
  contract: { routes: ReadonlyArray<AnyRoute<Rule>>; auth: SurfaceAuth<Rule, unknown>; validation: ValidationPolicy }
}

/** Per-call options: a JSON body and the credential to send. */
export interface CallOptions {
  json?: unknown
  /** Raw body: text (for malformed-JSON tests) or bytes (uploads). */
  body?: string | Uint8Array
  /** Session token, sent as `Authorization: Bearer`. */
  token?: string
  /** API key, sent as `x-api-key`. */
  apiKey?: string
  /** Sent as `X-Service-Org-Id`. */
  orgId?: string
  headers?: Record<string, string>
  /**
   * Writes carry a fresh `Idempotency-Key` unless `headers` names one, as first-party clients do;
   * false sends none (a test of the path without a key).
   */
  idempotencyKey?: false
}

/** A checked response. `body` is parsed JSON (null when empty). */
export interface CheckedResponse {
  status: number
  headers: Headers
  // deno-lint-ignore no-explicit-any
  body: any
  operationId: string | null
}

interface Compiled<Rule> {
  route: AnyRoute<Rule>
  regex: RegExp
  statuses: Set<number>
}

function pathRegex(path: string): RegExp {
  const pattern = path
    .split('/')
    .map((segment) => {
      if (segment.startsWith(':')) return segment.endsWith('+') ? '.+' : '[^/]+'
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('/')
  return new RegExp(`^${pattern}/?$`)
}

function describeIssues(issues: ReadonlyArray<v.BaseIssue<unknown>>): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${v.getDotPath(issue) ?? '(root)'}: ${issue.message}`)
    .join('; ')
}

/**
 * A fetch handler that sends each request to the server at `base()` (read per request, so a test
 * can point it at a restarted child process): a contract client over a real server over HTTP.
 */
export function forwardTo(base: () => string): (request: Request) => Promise<Response> {
  return (r) => {
    const u = new URL(r.url)
    return fetch(`${base()}${u.pathname}${u.search}`, {
      method: r.method,
      headers: r.headers,
      body: r.body,
      duplex: 'half',
    } as RequestInit)
  }
}

/** A contract-checking client over a surface's fetch handler and route table. */
export function contractClient<Rule>(source: ContractSource<Rule>) {
  const compiled: Compiled<Rule>[] = source.contract.routes.map((route) => ({
    route,
    regex: pathRegex(route.path),
    statuses: new Set([
      ...Object.keys(route.responses).map(Number),
      ...impliedErrorStatuses(route, source.contract.auth, source.contract.validation),
    ]),
  }))
  /** `operationId status` pairs seen, for coverage assertions. */
  const observed = new Set<string>()

  function check(method: string, pathname: string, status: number, headers: Headers, text: string): CheckedResponse {
    const where = `${method} ${pathname} → ${status}`
    const candidates = compiled.filter((c) => c.regex.test(pathname))
    const match = candidates.find((c) => c.route.method === method)
    const parse = () => {
      if (text === '') return null
      if (!(headers.get('content-type') ?? '').includes('application/json'))
        throw new ContractViolation(`${where}: expected JSON, got ${headers.get('content-type')}`)
      try {
        return JSON.parse(text)
      } catch {
        throw new ContractViolation(`${where}: body is not JSON`)
      }
    }
    if (!match) {
      const expected = candidates.length > 0 ? 405 : 404
      if (status !== expected && !(status === 404 && candidates.length > 0))
        throw new ContractViolation(`${where}: no route declares this; expected ${expected}`)
      const body = parse()
      const error = v.safeParse(ErrorBodySchema, body)
      if (!error.success)
        throw new ContractViolation(`${where}: error body does not match ErrorBody: ${describeIssues(error.issues)}`)
      return { status, headers, body, operationId: null }
    }
    const { route } = match
    if (!match.statuses.has(status))
      throw new ContractViolation(
        `${where}: ${route.operationId} does not declare status ${status} (declares ${[...match.statuses].sort().join(', ')}); body: ${text.slice(0, 300)}`,
      )
    observed.add(`${route.operationId} ${status}`)
    const spec = route.responses[status]
    if (status === 204) {
      if (text !== '') throw new ContractViolation(`${where}: 204 must have an empty body`)
      return { status, headers, body: null, operationId: route.operationId }
    }
    const body = parse()
    const schema = spec ? describeResponse(spec).schema : ErrorBodySchema
    if (schema) {
      const result = v.safeParse(schema, body)
      if (!result.success)
        throw new ContractViolation(
          `${where}: body does not match the declared schema of ${route.operationId}: ${describeIssues(result.issues)}; body: ${text.slice(0, 300)}`,
        )
    }
    return { status, headers, body, operationId: route.operationId }
  }

  async function call(method: string, path: string, options: CallOptions = {}): Promise<CheckedResponse> {
    const headers = new Headers(options.headers)
    let body: string | Uint8Array | undefined = options.body
    if (options.json !== undefined) {
      headers.set('content-type', 'application/json')
      body = JSON.stringify(options.json)
    }
    if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`)
    if (options.apiKey !== undefined) headers.set('x-api-key', options.apiKey)
    if (options.orgId !== undefined) headers.set('x-service-org-id', options.orgId)
    if (method !== 'GET' && method !== 'HEAD' && options.idempotencyKey !== false && !headers.has('idempotency-key'))
      headers.set('idempotency-key', crypto.randomUUID())
    const url = new URL(path, 'http://contract.test')
    const response = await source.fetch(new Request(url, { method, headers, body: body as BodyInit | undefined }))
    const text = await response.text()
    return check(
      method === 'HEAD' ? 'GET' : method,
      url.pathname,
      response.status,
      response.headers,
      method === 'HEAD' ? '' : text,
    )
  }

  return {
    call,
    get: (path: string, options?: CallOptions) => call('GET', path, options),
    post: (path: string, options?: CallOptions) => call('POST', path, options),
    patch: (path: string, options?: CallOptions) => call('PATCH', path, options),
    put: (path: string, options?: CallOptions) => call('PUT', path, options),
    delete: (path: string, options?: CallOptions) => call('DELETE', path, options),
    observed,
    /** The routes this client checks against. */
    routes: source.contract.routes,
  }
}

/** A contract client. */
export type ContractClient = ReturnType<typeof contractClient>
