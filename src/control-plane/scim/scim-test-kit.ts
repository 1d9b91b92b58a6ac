/**
 * A SCIM client for tests: requests go through the control plane's own Fetch handler (the router,
 * auth and every pipeline step), as an identity provider sends them, and answers are checked to be
 * `application/scim+json` before their JSON is read.
 * @module
 */
import type { TestControlPlane } from '../testing/test-control-plane.ts'
import type { FixtureOrg } from '../testing/org-fixture.ts'

/** A SCIM answer: status, headers and the parsed body (null when empty). */
export interface ScimAnswer {
  status: number
  headers: Headers
  // deno-lint-ignore no-explicit-any
  body: any
}

/** Sends one SCIM request with `token` as its bearer. */
export async function scimCall(
  t: TestControlPlane,
  token: string | null,
  method: string,
  path: string,
  options: { json?: unknown; body?: string; contentType?: string; headers?: Record<string, string> } = {},
): Promise<ScimAnswer> {
  const headers = new Headers(options.headers)
  if (token !== null) headers.set('authorization', `Bearer ${token}`)
  let body: string | undefined = options.body
  if (options.json !== undefined) body = JSON.stringify(options.json)
  if (body !== undefined) headers.set('content-type', options.contentType ?? 'application/scim+json')
  const response = await t.app.fetch(new Request(`http://scim.test/scim/v2${path}`, { method, headers, body }))
  const text = await response.text()
  if (text !== '' && !(response.headers.get('content-type') ?? '').startsWith('application/scim+json'))
    throw new Error(`${method} ${path} → ${response.status} answered ${response.headers.get('content-type')}: ${text}`)
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) }
}

/** A SCIM client bound to one token. */
export function scimClient(t: TestControlPlane, token: string | null) {
  return {
    get: (path: string) => scimCall(t, token, 'GET', path),
    post: (path: string, json: unknown) => scimCall(t, token, 'POST', path, { json }),
    put: (path: string, json: unknown) => scimCall(t, token, 'PUT', path, { json }),
    patch: (path: string, json: unknown) => scimCall(t, token, 'PATCH', path, { json }),
    delete: (path: string) => scimCall(t, token, 'DELETE', path),
    call: (method: string, path: string, options?: Parameters<typeof scimCall>[4]) =>
      scimCall(t, token, method, path, options),
  }
}

/** Creates a SCIM token as the fixture organization's owner and returns its plaintext. */
export async function ownerScimToken(t: TestControlPlane, org: FixtureOrg, name = 'idp'): Promise<string> {
  const created = await t.client.post('/v1/org/scim-tokens', {
    token: org.owner.token,
    orgId: org.orgId,
    json: { name },
  })
  if (created.status !== 201) throw new Error(`scim token: ${created.status} ${JSON.stringify(created.body)}`)
  return created.body.token
}

/** The PatchOp message for `operations`. */
export function patchOp(...operations: unknown[]) {
  return { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: operations }
}

/** The core User schema URN, for request bodies. */
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User'
/** The core Group schema URN, for request bodies. */
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group'
