/**
 * SCIM's error format (RFC 7644 §3.12): `{schemas: [Error URN], status: "400", scimType, detail}`
 * as `application/scim+json`. Every answer of the `/scim/v2` routes, credential refusals included,
 * is built here; the body also carries the API's `code` and `message`, so one error type serves
 * both readers (SCIM clients switch on `scimType` and `status`, our tooling on `code`).
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import { controlPlaneError, type ControlPlaneErrorCode } from '../control-plane-errors.ts'

/** The SCIM error message schema. */
export const SCIM_ERROR_URN = 'urn:ietf:params:scim:api:messages:2.0:Error'
/** The media type SCIM answers with (RFC 7644 §3.1). */
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8'

/** RFC 7644 Table 9's `scimType` values this service answers with. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'

const CODES: Record<ScimType, ControlPlaneErrorCode> = {
  invalidFilter: 'scim_invalid_filter',
  tooMany: 'scim_too_many',
  uniqueness: 'scim_uniqueness',
  mutability: 'scim_mutability',
  invalidSyntax: 'scim_invalid_syntax',
  invalidPath: 'scim_invalid_path',
  noTarget: 'scim_no_target',
  invalidValue: 'scim_invalid_value',
}

/** Statuses without a `scimType`, and their code. */
const PLAIN: Record<number, ControlPlaneErrorCode> = {
  401: 'unauthorized',
  404: 'scim_not_found',
  412: 'scim_precondition_failed',
  413: 'scim_payload_too_large',
  415: 'scim_unsupported_media_type',
}

function build(
  code: ControlPlaneErrorCode,
  status: number,
  detail: string,
  scimType?: ScimType,
  headers: Record<string, string> = {},
): ApiError {
  return controlPlaneError(code, detail, {
    status,
    extra: { schemas: [SCIM_ERROR_URN], status: String(status), ...(scimType ? { scimType } : {}), detail },
    headers: { ...headers, 'content-type': SCIM_CONTENT_TYPE },
  })
}

/** A SCIM error with a `scimType` (400, or 409 for `uniqueness`). */
export function scimError(scimType: ScimType, detail: string): ApiError {
  return build(CODES[scimType], scimType === 'uniqueness' ? 409 : 400, detail, scimType)
}

/** A SCIM error without a `scimType`: 401, 404, 412, 413 or 415 (`headers`: e.g. a 401's challenge). */
export function scimStatusError(
  status: 401 | 404 | 412 | 413 | 415,
  detail: string,
  headers: Record<string, string> = {},
): ApiError {
  return build(PLAIN[status]!, status, detail, undefined, headers)
}

/**
 * Re-shapes an error of the shared pipeline (a database outage, an Idempotency-Key refusal, an
 * owner-protection conflict) into SCIM's format, keeping its status, code and headers.
 */
export function asScimError(error: unknown): unknown {
  if (!(error instanceof ApiError) || (error.extra && 'schemas' in error.extra)) return error
  const status = String(error.status)
  return new ApiError(error.status, error.code, error.message, {
    details: error.details,
    extra: { schemas: [SCIM_ERROR_URN], status, detail: error.message },
    headers: { ...error.headers, 'content-type': SCIM_CONTENT_TYPE },
  })
}

/** A SCIM resource or list answer. */
export function scimJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': SCIM_CONTENT_TYPE, 'x-content-type-options': 'nosniff', ...headers },
  })
}
