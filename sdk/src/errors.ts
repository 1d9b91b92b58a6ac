/**
 * Typed errors: every error the servers answer is an `ErrorBody` (`{code, message, details?}`);
 * `unwrap` turns a generated operation's `{data, error, response}` into its data or a thrown
 * {@link ServiceApiError} carrying the status, code and details.
 * @module
 */

/** The error body both servers answer with (see each document's `x-error-codes`). */
export interface ErrorBody {
  /** Stable snake_case code, e.g. `validation_failed`, `not_found`. */
  code: string
  /** Human-readable; may change. */
  message: string
  /** Machine-readable context; `issues` on validation errors, other keys depending on `code`. */
  details?: { issues?: Array<{ path: string; message: string }>; [key: string]: unknown }
}

/** An error answer from either server, or a transport answer without a JSON body. */
export class ServiceApiError extends Error {
  /** HTTP status. */
  readonly status: number
  /** The stable code; `http_<status>` when the answer had no ErrorBody (e.g. a proxy's 502). */
  readonly code: string
  readonly details: ErrorBody['details']
  /** The server's `X-Request-Id`, to quote in a report. */
  readonly requestId: string | null

  constructor(status: number, body: Partial<ErrorBody> | null, requestId: string | null) {
    super(body?.message ?? `HTTP ${status}`)
    this.name = 'ServiceApiError'
    this.status = status
    this.code = typeof body?.code === 'string' ? body.code : `http_${status}`
    this.details = body?.details
    this.requestId = requestId
  }
}

/** Whether a value looks like an ErrorBody. */
export function isErrorBody(value: unknown): value is ErrorBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ErrorBody).code === 'string' &&
    typeof (value as ErrorBody).message === 'string'
  )
}

/** The result every generated operation returns (with `throwOnError` left false). */
export type OperationResult<T> =
  | { data: T; error: undefined; response: Response }
  | { data: undefined; error: unknown; response: Response }

/**
 * The operation's data, or a thrown {@link ServiceApiError}:
 * `const me = await unwrap(cp.getMe())`.
 */
export async function unwrap<T>(pending: Promise<OperationResult<T>>): Promise<T> {
  const result = await pending
  if (result.error === undefined && result.response.ok) return result.data as T
  throw new ServiceApiError(
    result.response.status,
    isErrorBody(result.error) ? result.error : null,
    result.response.headers.get('x-request-id'),
  )
}
