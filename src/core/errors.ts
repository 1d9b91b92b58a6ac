/**
 * The one error type handlers throw, and the one JSON shape clients see: `{code, message, details?}`.
 *
 * Codes are stable snake_case strings clients may switch on; messages are for people and may change.
 * Anything thrown that is not an {@link ApiError} becomes an opaque 500 so internal text
 * (SQL, paths, stack traces) never reaches a client.
 * @module
 */

/** The wire shape of every error response body. Extra top-level fields are allowed for compatibility. */
export interface ErrorBody {
  code: string
  message: string
  details?: unknown
  [extra: string]: unknown
}

/** An error with an HTTP status and a stable code, safe to show to the caller. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly details: unknown
  /** Extra top-level body fields, e.g. the reference's `{ok:false, preview}` on import conflicts. */
  readonly extra: Record<string, unknown> | undefined
  /** Extra response headers, e.g. `Retry-After` on 429 or `Allow` on 405. */
  readonly headers: Record<string, string> | undefined

  constructor(
    status: number,
    code: string,
    message: string,
    options: { details?: unknown; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.details = options.details
    this.extra = options.extra
    this.headers = options.headers
  }

  /** The JSON body for this error. */
  toBody(): ErrorBody {
    const body: ErrorBody = { ...this.extra, code: this.code, message: this.message }
    if (this.details !== undefined) body.details = this.details
    return body
  }
}

/**
 * The database cannot serve now (unreachable, shutting down, or a statement past its timeout). The
 * storage layer throws it; clients get 503 with `Retry-After` and retry, and nothing was committed.
 */
export class DatabaseUnavailableError extends ApiError {
  constructor(readonly reason: 'unreachable' | 'statement_timeout') {
    super(
      503,
      'database_unavailable',
      reason === 'statement_timeout'
        ? 'The database did not answer in time; nothing was changed, retry shortly'
        : 'The database is not reachable; nothing was changed, retry shortly',
      { headers: { 'retry-after': '2' }, details: { reason } },
    )
    this.name = 'DatabaseUnavailableError'
  }
}

/**
 * Shorthands for the three errors whose code never varies and that carry something besides a
 * message (the 429's Retry-After). Every other error is made from the surface's catalogue
 * (`workspaceError`, `controlPlaneError`, `coreError`, `opencodeError`; see `error-catalogue.ts`),
 * which declares each code once with its status; these three codes are in `core-errors.ts`.
 */
export const errors = {
  unauthorized: (message = 'Missing or invalid credentials') => new ApiError(401, 'unauthorized', message),
  tooManyRequests: (retryAfterSeconds: number, message = 'Too many requests') =>
    new ApiError(429, 'rate_limited', message, {
      details: { retryAfterSeconds },
      headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  internal: () => new ApiError(500, 'internal_error', 'Unexpected server error'),
}

/** Builds the JSON response for an error, adding its headers. */
export function errorResponse(error: ApiError, headers?: HeadersInit): Response {
  const response = jsonResponse(error.toBody(), { status: error.status, headers })
  if (error.headers) for (const [name, value] of Object.entries(error.headers)) response.headers.set(name, value)
  return response
}

/**
 * A JSON body already serialised (and perhaps encoded) by the caller, e.g. from a read cache.
 * Handlers return it instead of a Response so the pipeline builds the response once, with all its
 * headers, rather than amending a finished one.
 */
export class PreEncodedJson {
  constructor(readonly body: string | Uint8Array) {}
}

/** A JSON response with the right content type; the one place responses are serialised. */
export function jsonResponse(body: unknown, init: ResponseInit = {}): Response {
  const headers = new Headers(init.headers)
  headers.set('content-type', 'application/json; charset=utf-8')
  return new Response(JSON.stringify(body), { ...init, headers })
}
