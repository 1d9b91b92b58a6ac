/**
 * Error catalogues: every error code a surface can answer with is declared once, with its HTTP
 * status and a one-line meaning, and errors are made from the catalogue by code. The status then
 * cannot drift between call sites, a misspelt code does not compile, and the OpenAPI document lists
 * exactly the codes the code base can produce (see `x-error-codes` in `openapi.ts`).
 *
 * Catalogues compose: `src/core/core-errors.ts` (codes the shared pipeline and storage produce),
 * `src/opencode/opencode-errors.ts` (skill bundles and archives, used by both surfaces), and one per
 * surface that spreads the shared ones it can answer with.
 * @module
 */
import { ApiError } from './errors.ts'

/** One catalogue entry: the status the code is answered with and what it means to a client. */
export interface ErrorEntry {
  readonly status: number
  /** One line for clients: when this code is answered. Also the default message. */
  readonly description: string
  /**
   * Statuses this code is also answered with. Only for codes that shipped with two statuses before
   * the catalogue existed; clients switch on both, so neither may change. New codes get one status.
   */
  readonly otherStatuses?: readonly number[]
}

/** Codes (snake_case) to their entries. */
export type ErrorCatalogue = Readonly<Record<string, ErrorEntry>>

/** What an error may carry besides its code and message (see {@link ApiError}). */
export interface ErrorOptions {
  details?: unknown
  extra?: Record<string, unknown>
  headers?: Record<string, string>
  /** One of the entry's `otherStatuses`, for the few codes that have two. */
  status?: number
}

/** Makes errors from a catalogue: `(code, message?, options?) → ApiError` with the catalogued status. */
export type ErrorFactory<C extends ErrorCatalogue> = (
  code: keyof C & string,
  message?: string,
  options?: ErrorOptions,
) => ApiError

/** Declares a catalogue; the identity function, so entries keep their literal codes for typing. */
export function defineErrors<const C extends ErrorCatalogue>(catalogue: C): C {
  return catalogue
}

/** The factory for a catalogue. A status outside the entry's own is a defect and throws. */
export function errorFactory<C extends ErrorCatalogue>(catalogue: C): ErrorFactory<C> {
  return (code, message, options = {}) => {
    const entry = catalogue[code]
    if (!entry) throw new Error(`Error code ${code} is not in the catalogue`)
    const status = options.status ?? entry.status
    if (status !== entry.status && !entry.otherStatuses?.includes(status)) {
      throw new Error(`Error code ${code} is catalogued with status ${entry.status}, not ${status}`)
    }
    return new ApiError(status, code, message ?? entry.description, {
      details: options.details,
      extra: options.extra,
      headers: options.headers,
    })
  }
}

/** One documented code, as the OpenAPI documents list them. */
export interface DocumentedErrorCode {
  code: string
  status: number
  otherStatuses?: number[]
  description: string
}

/** A catalogue as a list sorted by status then code, for documents and tests. */
export function listErrorCodes(catalogue: ErrorCatalogue): DocumentedErrorCode[] {
  return Object.entries(catalogue)
    .map(([code, entry]) => ({
      code,
      status: entry.status,
      ...(entry.otherStatuses ? { otherStatuses: [...entry.otherStatuses] } : {}),
      description: entry.description,
    }))
    .sort((a, b) => a.status - b.status || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0))
}
