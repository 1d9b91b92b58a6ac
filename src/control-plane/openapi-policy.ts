/**
 * Adds what the core document builder does not know about the control plane to the OpenAPI
 * document: on every organization-scoped operation, the optional `X-Service-Org-Id` header and an
 * `x-permission` extension naming the policy-table permission with the roles that hold it; on
 * every write with a credential, the `Idempotency-Key` header and the `Idempotency-Replayed`
 * header on its successes (idempotency/idempotent-routes.ts).
 * @module
 */
import type * as v from 'valibot'
import type { AnyRoute } from '../core/route.ts'
import { objectEntries, openApiPath } from '../core/openapi.ts'
import { POLICY, type ControlPlaneRule } from './policy.ts'

const ORG_HEADER_PARAMETER = {
  name: 'X-Service-Org-Id',
  in: 'header',
  required: false,
  description:
    "Organization to act in (must be one of the caller's; otherwise 404). Ignored for API keys, which always act in their own organization (a different value is 404). Default: the session's active organization.",
  schema: { type: 'string', pattern: '^org_[0-9a-hjkmnp-tv-z]{26}$' },
}

const IDEMPOTENCY_KEY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe (IETF httpapi idempotency-key draft): a repeat with the same key, credential and request gets the first answer again (with `Idempotency-Replayed: true`) without running anything; the same key with another request is 422 `idempotency_key_reused`; a repeat while the first still runs is 409 `idempotency_key_in_progress` with Retry-After. Keys are kept 24 hours by default (`idempotencyKeyTtlHours`). 1 to 255 printable ASCII characters, bare or as a quoted string (else 400 `idempotency_key_invalid`).',
  schema: { type: 'string', minLength: 1, maxLength: 257, pattern: '^[\\x20-\\x7e]+$' },
}

const REPLAYED_RESPONSE_HEADER = {
  description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key',
  schema: { type: 'string', enum: ['true'] },
}

/**
 * Documents Idempotency-Key on one write operation (its 400/409/422 answers are among the route's
 * declared errors already: `idempotentRoutes` adds them).
 */
function annotateIdempotency(operation: Record<string, unknown>): void {
  operation.parameters = [...((operation.parameters as unknown[]) ?? []), IDEMPOTENCY_KEY_PARAMETER]
  const responses = operation.responses as Record<string, Record<string, unknown>>
  for (const [status, response] of Object.entries(responses)) {
    if (!status.startsWith('2')) continue
    response.headers = { ...(response.headers as object), 'Idempotency-Replayed': REPLAYED_RESPONSE_HEADER }
  }
}

/**
 * Query schemas that parse text into something else (an integer page size) and so cannot be
 * converted faithfully: the core converter sees a string. They register the JSON Schema that
 * describes their accepted values here, and {@link annotatePolicy} puts it in the document.
 */
const documented = new WeakMap<object, Record<string, unknown>>()

/** Registers the documented JSON Schema of a query-parameter schema; returns the schema. */
export function documentQueryParam<S extends v.GenericSchema>(schema: S, json: Record<string, unknown>): S {
  documented.set(schema, json)
  return schema
}

/** Annotates a generated document in place and returns it. */
export function annotatePolicy(
  doc: Record<string, unknown>,
  routes: ReadonlyArray<AnyRoute<ControlPlaneRule>>,
): Record<string, unknown> {
  const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>
  for (const route of routes) {
    if (route.auth.kind === 'public') continue
    const operation = paths[openApiPath(route.path)]?.[route.method.toLowerCase()]
    if (!operation) continue
    if (route.method !== 'GET') annotateIdempotency(operation)
    // Neither a Worker nor an identity provider names an organization: its token does.
    if (route.auth.kind === 'workerToken' || route.auth.kind === 'scim') continue
    for (const [name, schema] of Object.entries(objectEntries(route.query as v.GenericSchema | undefined))) {
      const json = documented.get(schema)
      const parameter = (operation.parameters as Array<Record<string, unknown>> | undefined)?.find(
        (p) => p.name === name && p.in === 'query',
      )
      if (json && parameter) parameter.schema = json
    }
    operation.parameters = [...((operation.parameters as unknown[]) ?? []), ORG_HEADER_PARAMETER]
    if (route.auth.kind === 'org') {
      const policy = POLICY[route.auth.permission]
      operation['x-permission'] = { name: route.auth.permission, roles: [...policy.roles], apiKey: policy.apiKey }
    } else {
      operation['x-permission'] = { name: null, sessionOnly: route.auth.sessionOnly === true }
    }
  }
  return doc
}
