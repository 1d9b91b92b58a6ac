/**
 * `Idempotency-Key` on every control-plane write (the IETF httpapi idempotency-key draft): each
 * non-GET route's handler is wrapped once here, so route modules stay as they are.
 *
 * - No header: the handler runs in a {@link TransactionScope} that only counts commits, so a
 *   database failure after a commit answers 503 `outcome_unknown`, never "nothing was changed".
 * - A key: it is claimed for the caller (scope `user:<id>` for a session, `key:<id>` for an API
 *   key, `worker:<token digest>` for a Worker's activity token) with a fingerprint of the method,
 *   target, `X-Service-Org-Id` and body; every transaction of the run counts itself on the key's row
 *   before it commits; the answer is sealed and kept until the key expires. A repeat gets that
 *   answer with `Idempotency-Replayed: true`; a different request with the key 422
 *   `idempotency_key_reused`; a repeat while the first runs 409 `idempotency_key_in_progress`.
 * - Public routes (sign-up, sign-in) ignore the header: without a credential
 *   the only scope would be the key itself (one caller's key could replay another's answer, a
 *   session token among them), and their retries are safe as they are.
 * @module
 */
import type { Kysely } from 'kysely'
import { successStatus } from '../../core/dispatch.ts'
import { ApiError, DatabaseUnavailableError, errorResponse, PreEncodedJson } from '../../core/errors.ts'
import type { Logger } from '../../core/logger.ts'
import { isRawBody, type AnyRoute, type HandlerContext } from '../../core/route.ts'
import { createSha256, sha256Hex } from '../../core/sha256.ts'
import { outcomeUnknown, runInTransactionScope, type TransactionScope } from '../../storage/transaction-scope.ts'
import { ORG_HEADER, type ControlPlanePrincipal } from '../auth.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import type { Deps } from '../deps.ts'
import type { ControlPlaneRule } from '../policy.ts'
import type { ControlPlaneDb } from '../schema.ts'
import {
  abandonKey,
  claimKey,
  commitTookEffect,
  markCommit,
  recordAnswer,
  releaseKey,
  renewLease,
  LEASE_MS,
  type Claim,
  type StoredAnswer,
} from './idempotency-store.ts'

/** The request header. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'
/** The response header marking a repeated answer. */
export const REPLAYED_HEADER = 'Idempotency-Replayed'

/** Printable ASCII (space to tilde), 1 to 255 characters. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/

/** Response headers a replay repeats (besides the ones every response gets). */
const KEPT_HEADERS = ['content-type', 'location', 'etag', 'last-modified']

/** What {@link idempotentRoutes} needs. */
export interface IdempotencyOptions {
  deps: Deps
  /** How long a key and its answer are kept, in ms. */
  ttlMs: number
  logger: Logger
  /**
   * Reads a raw (handler-read) body with the route's own limit and errors, so it can be
   * fingerprinted; the handler then reads the same bytes again.
   */
  readRawBody: (route: AnyRoute, request: Request) => Promise<Uint8Array>
}

type Context = HandlerContext<unknown, unknown, unknown, ControlPlanePrincipal>
type Route = AnyRoute<ControlPlaneRule, ControlPlanePrincipal>

/** The key a request sends, or null; 400 `idempotency_key_invalid` when it is not a valid key. */
export function idempotencyKeyOf(request: Request): string | null {
  let value = request.headers.get('idempotency-key')
  if (value === null) return null
  // The draft sends it as a structured-field string ("..."); a bare token is accepted as well.
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
  if (!KEY_PATTERN.test(value))
    throw controlPlaneError('idempotency_key_invalid', 'Idempotency-Key must be 1 to 255 printable ASCII characters')
  return value
}

/** The caller a key belongs to, or null when the route has no credential to scope it by. */
function callerScope(route: Route, context: Context): string | null {
  const principal = context.principal
  if (principal.credential === 'apiKey' && principal.apiKeyId) return `key:${principal.apiKeyId}`
  if (principal.credential === 'session' && principal.user) return `user:${principal.user.id}`
  if (principal.credential === 'scim' && principal.scim) return `scim:${principal.scim.tokenId}`
  if (route.auth.kind === 'workerToken') {
    const token = context.request.headers.get('authorization')
    return token ? `worker:${sha256Hex(token)}` : null
  }
  return null
}

/** Statuses a write with a credential may answer because of its key: invalid, in progress, reused. */
const KEY_STATUSES = [400, 409, 422]

/**
 * Wraps every write route of `routes` (see the module comment), adding the statuses a key can
 * cause to those it declares; GET routes are returned as they are.
 */
export function idempotentRoutes(routes: Route[], options: IdempotencyOptions): Route[] {
  return routes.map((route) => {
    if (route.method === 'GET') return route
    const errors =
      route.auth.kind === 'public' ? route.errors : [...new Set([...(route.errors ?? []), ...KEY_STATUSES])]
    return { ...route, errors, handler: wrap(route, options) }
  })
}

function wrap(route: Route, options: IdempotencyOptions): Route['handler'] {
  const handler = route.handler
  const honoured = route.auth.kind !== 'public'
  return (context: Context) => {
    const key = honoured ? idempotencyKeyOf(context.request) : null
    const scopeName = key === null ? null : callerScope(route, context)
    if (key === null || scopeName === null) {
      const scope: TransactionScope = { commits: 0 }
      return runInTransactionScope(scope, () => {
        const result = handler(context)
        if (!(result instanceof Promise)) {
          scope.ended = true
          return result
        }
        return result.then(
          (value) => {
            scope.ended = true
            return value
          },
          (error) => {
            scope.ended = true
            return afterCommitFailure(error, scope)
          },
        )
      })
    }
    return keyed(route, options, context, scopeName, key)
  }
}

/** A database failure once something committed cannot be "nothing was changed". */
function afterCommitFailure(error: unknown, scope: TransactionScope): never {
  if (scope.commits > 0 && error instanceof DatabaseUnavailableError) throw outcomeUnknown()
  throw error
}

async function keyed(
  route: Route,
  options: IdempotencyOptions,
  original: Context,
  scopeName: string,
  key: string,
): Promise<Response> {
  const { deps } = options
  let context = original
  // The organization as the request names it: the one a session acts in by default is state that
  // the first request may itself change (creating an organization makes it the active one).
  const orgHeader = original.request.headers.get(ORG_HEADER) ?? ''
  const fingerprint = createSha256().update(
    `${route.method}\n${original.url.pathname}${original.url.search}\n${orgHeader}\n`,
  )
  if (isRawBody(route.body)) {
    const bytes = await options.readRawBody(route, original.request)
    fingerprint.update(bytes)
    const request = new Request(original.request.url, {
      method: original.request.method,
      headers: original.request.headers,
      body: bytes as BodyInit,
      signal: original.request.signal,
    })
    context = Object.create(original, { request: { value: request } }) as Context
  } else if (original.body !== undefined) {
    fingerprint.update(JSON.stringify(original.body))
  }
  const claimed = await claimKey(deps, scopeName, key, fingerprint.hex(), options.ttlMs)
  if ('replay' in claimed) return replay(claimed.replay)
  const claim = claimed.claim
  const scope: TransactionScope = {
    commits: 0,
    beforeCommit: (trx, commitNumber) => markCommit(trx as Kysely<ControlPlaneDb>, claim, commitNumber),
    resolveCommit: (commitNumber) => commitTookEffect(deps, claim, commitNumber),
  }
  // The claim stays fresh while the handler runs, so only a claim nobody runs can be taken over.
  const renewal = setInterval(() => void renewLease(deps, claim).catch(() => {}), LEASE_MS / 3)
  let result: unknown
  try {
    result = await runInTransactionScope(scope, () => route.handler(context))
  } catch (error) {
    scope.ended = true
    throw await failed(options, claim, scope, error)
  } finally {
    scope.ended = true
    clearInterval(renewal)
  }
  const response = answerOf(route, result)
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    // A stream has no end to wait for, so it cannot be kept: the key records only whether it committed.
    await (scope.commits === 0 ? releaseKey(deps, claim) : abandonKey(deps, claim)).catch(() => {})
    return response
  }
  const body = response.body ? new Uint8Array(await response.arrayBuffer()) : null
  const answer: StoredAnswer = { status: response.status, headers: keptHeaders(response.headers), body }
  await recordAnswer(deps, claim, answer).catch((error: unknown) => {
    // The client still gets its answer; a repeat learns that it was lost (or, when nothing was
    // committed through a transaction, runs again).
    options.logger.warn('idempotency answer not recorded', { key: claim.key, error: String(error) })
  })
  return new Response(body as BodyInit | null, { status: response.status, headers: response.headers })
}

/** What a failed run leaves on its key, and the error to answer with. */
async function failed(options: IdempotencyOptions, claim: Claim, scope: TransactionScope, error: unknown) {
  const { deps } = options
  try {
    if (scope.commits === 0) {
      // Nothing was committed through a transaction: a repeat may simply run again. Unless the
      // run could not tell whether its COMMIT took effect and the row now says it did: then
      // repeats must learn at once that the work was done.
      const freed = await releaseKey(deps, claim)
      if (!freed && error instanceof ApiError && error.code === 'outcome_unknown') await abandonKey(deps, claim)
      return error
    }
    if (error instanceof ApiError && error.status < 500) {
      const response = errorResponse(error)
      const body = new Uint8Array(await response.arrayBuffer())
      await recordAnswer(deps, claim, { status: response.status, headers: keptHeaders(response.headers), body })
      return error
    }
    await abandonKey(deps, claim)
  } catch (storeError) {
    // The database is gone too: the lease runs out and the row tells a repeat what happened.
    options.logger.warn('idempotency key not updated after a failure', { key: claim.key, error: String(storeError) })
  }
  return scope.commits > 0 && error instanceof DatabaseUnavailableError ? outcomeUnknown() : error
}

/** The response a handler's result becomes, as dispatch would shape it. */
function answerOf(route: Route, result: unknown): Response {
  if (result instanceof Response) return result
  const status = successStatus(route)
  if (result === undefined || status === 204) return new Response(null, { status })
  const body = result instanceof PreEncodedJson ? result.body : JSON.stringify(result)
  return new Response(body as BodyInit, { status, headers: { 'content-type': 'application/json; charset=utf-8' } })
}

function keptHeaders(headers: Headers): Array<[string, string]> {
  const kept: Array<[string, string]> = []
  for (const name of KEPT_HEADERS) {
    const value = headers.get(name)
    if (value !== null) kept.push([name, value])
  }
  return kept
}

function replay(answer: StoredAnswer): Response {
  const headers = new Headers(answer.headers)
  headers.set(REPLAYED_HEADER, 'true')
  return new Response(answer.body as BodyInit | null, { status: answer.status, headers })
}
