/**
 * The contract itself: `/openapi.json` is valid OpenAPI 3.1, declares for every route its
 * security scheme, parameters with bounds, schemas and statuses (with the policy permission),
 * matches the router exactly, and the contract client really rejects responses that drift.
 */
import { Validator } from '@seriousme/openapi-schema-validator'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import * as v from 'valibot'
import { assert, suite } from '../../tests/harness.ts'
import { ApiError } from '../core/errors.ts'
import { createHttpApp } from '../core/http-app.ts'
import { silentLogger } from '../core/logger.ts'
import { openApiPath } from '../core/openapi.ts'
import { routeFactory } from '../core/route.ts'
import { POLICY, type ControlPlaneRule, type PermissionPolicy } from './policy.ts'
import { contractClient, ContractViolation } from './testing/contract-client.ts'
import { startTestControlPlane } from './testing/test-control-plane.ts'

const test = suite('control-plane/contract')

type Operation = {
  security: Array<Record<string, string[]>>
  responses: Record<string, unknown>
  parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }>
  requestBody?: unknown
  'x-permission'?: { name: string | null; roles?: string[] }
}

test('the OpenAPI document is valid 3.1 and documents exactly the routes the router serves', async () => {
  const t = await startTestControlPlane()
  try {
    const doc = (await t.client.get('/openapi.json')).body
    const result = await new Validator().validate(structuredClone(doc))
    assert.ok(result.valid, String(JSON.stringify(result.errors)).slice(0, 500))
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`))
      .sort()
    const registered = t.app.contract.routes.map((r) => `${r.method} ${openApiPath(r.path)}`).sort()
    assert.equal(documented, registered)
    const operationIds = t.app.contract.routes.map((r) => r.operationId)
    assert.is(new Set(operationIds).size, operationIds.length, 'operation ids are unique')
    assert.equal(Object.keys(doc.components.securitySchemes).sort(), [
      'apiKey',
      'bearerSession',
      'oauthToken',
      'scimToken',
      'workerActivityToken',
    ])
  } finally {
    await t.close()
  }
})

test('every operation declares its security scheme, statuses and policy permission from the same rule the router enforces', async () => {
  const t = await startTestControlPlane()
  try {
    const doc = t.app.openapi() as { paths: Record<string, Record<string, Operation>> }
    for (const route of t.app.contract.routes) {
      const op = doc.paths[openApiPath(route.path)]![route.method.toLowerCase()]!
      const rule = route.auth as ControlPlaneRule
      const where = `${route.method} ${route.path}`
      const statuses = Object.keys(op.responses)
      assert.ok(statuses.includes('500'), where)
      if (rule.kind === 'public') {
        assert.equal(op.security, [], where)
        assert.is(
          statuses.includes('401'),
          route.errors?.includes(401) === true,
          `${where}: 401 only where the route itself can refuse`,
        )
        continue
      }
      assert.ok(statuses.includes('401'), `${where} declares 401`)
      if (rule.kind === 'workerToken') {
        assert.equal(op.security, [{ workerActivityToken: [] }], where)
        continue
      }
      if (rule.kind === 'scim') {
        assert.equal(op.security, [{ scimToken: [] }], where)
        continue
      }
      const keysAllowed = rule.kind === 'org' ? POLICY[rule.permission].apiKey : !rule.sessionOnly
      // OAuth tokens: listed with the scopes that reach the operation (the route's own, else its permission's).
      const scopes =
        rule.kind === 'identity' && rule.sessionOnly
          ? []
          : (rule.oauthScopes ??
            (rule.kind === 'org' ? (POLICY[rule.permission] as PermissionPolicy).scopes : []) ??
            [])
      const oauth = scopes.length > 0 ? [{ oauthToken: [...scopes] }] : []
      const worker = rule.kind === 'org' && rule.worker ? [{ workerActivityToken: [] }] : []
      assert.equal(
        op.security,
        keysAllowed
          ? [{ bearerSession: [] }, { apiKey: [] }, ...oauth, ...worker]
          : [{ bearerSession: [] }, ...oauth, ...worker],
        where,
      )
      if (rule.kind === 'org' || rule.sessionOnly) assert.ok(statuses.includes('403'), `${where} declares 403`)
      if (rule.kind === 'org')
        assert.equal(
          op['x-permission'],
          { name: rule.permission, roles: [...POLICY[rule.permission].roles], apiKey: POLICY[rule.permission].apiKey },
          where,
        )
      // The MCP transport answers a malformed message with a JSON-RPC error and 400, as its specification says.
      if (op.requestBody && route.path !== '/mcp') assert.ok(statuses.includes('422'), `${where} declares 422`)
      assert.ok(
        op.parameters?.some((p) => p.name === 'X-Service-Org-Id' && p.in === 'header'),
        `${where} documents the org header`,
      )
      const limit = op.parameters?.find((p) => p.name === 'limit')
      if (limit) {
        assert.equal(
          [limit.schema.type, limit.schema.minimum, limit.schema.maximum],
          ['integer', 1, route.path === '/v1/workers' ? 50 : 100],
          `${where} limit bounds`,
        )
        assert.ok(statuses.includes('400'), `${where} declares 400 for a bad cursor`)
      }
    }
  } finally {
    await t.close()
  }
})

test('the contract client rejects undeclared fields, statuses and error shapes', async () => {
  type Rule = 'open'
  const route = routeFactory<Rule, null>()
  const Thing = v.strictObject({ id: v.string() })
  const routes = [
    route({
      method: 'GET',
      path: '/leaky',
      operationId: 'leaky',
      summary: 's',
      auth: 'open',
      responses: { 200: Thing },
      handler: () => ({ id: 'x', passwordHash: 'oops' }),
    }),
    route({
      method: 'GET',
      path: '/teapot',
      operationId: 'teapot',
      summary: 's',
      auth: 'open',
      responses: { 200: Thing },
      handler: () => {
        throw new ApiError(418, 'teapot', 'short and stout')
      },
    }),
    route({
      method: 'GET',
      path: '/fine',
      operationId: 'fine',
      summary: 's',
      auth: 'open',
      responses: { 200: Thing },
      handler: () => ({ id: 'x' }),
    }),
    route({
      method: 'DELETE',
      path: '/things/:id',
      operationId: 'chatty',
      summary: 's',
      auth: 'open',
      responses: { 204: { description: 'gone' } },
      handler: () => new Response('{"unexpected":true}', { status: 204 }),
    }),
    route({
      method: 'GET',
      path: '/bad-error',
      operationId: 'badError',
      summary: 's',
      auth: 'open',
      responses: { 200: Thing },
      errors: [409],
      handler: () =>
        new Response('{"error":"legacy"}', { status: 409, headers: { 'content-type': 'application/json' } }),
    }),
  ]
  const auth = { authenticate: () => null, security: () => [], statuses: () => [] }
  const validation = { status: 422, bodyCode: 'validation_failed', queryCode: 'validation_failed' }
  const http = createHttpApp({
    routes,
    auth,
    validation,
    cors: { origins: [], allowHeaders: [] },
    logger: silentLogger,
    requestLog: false,
  })
  const client = contractClient({ fetch: http.fetch, contract: { routes, auth, validation } })
  const violation = async (path: string, method = 'GET') => {
    try {
      await client.call(method, path)
      return null
    } catch (error) {
      assert.instance(error, ContractViolation)
      return (error as Error).message
    }
  }
  assert.match((await violation('/leaky')) ?? '', /passwordHash/)
  assert.match((await violation('/teapot')) ?? '', /does not declare status 418/)
  assert.match((await violation('/things/1', 'DELETE')) ?? '', /204 must have an empty body/)
  assert.match((await violation('/bad-error')) ?? '', /ErrorBody|declared schema/)
  assert.is(await violation('/fine'), null)
  assert.is((await client.get('/nowhere')).status, 404)
  assert.ok(client.observed.has('fine 200'))
})

test('the policy table in docs/control-plane-api.md matches the one the server enforces', () => {
  const doc = readFileSync(
    join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../docs/control-plane-api.md'),
    'utf8',
  )
  const rows = new Map<string, string[]>()
  for (const line of doc.split('\n')) {
    const match = /^\| `([a-z_.]+)` \| (yes|no) \| (yes|no) \| (yes|no) \| (yes|no) \|$/.exec(line)
    if (match) rows.set(match[1]!, match.slice(2))
  }
  assert.equal([...rows.keys()].sort(), Object.keys(POLICY).sort())
  for (const [permission, policy] of Object.entries(POLICY)) {
    const roles: readonly string[] = policy.roles
    assert.equal(
      rows.get(permission),
      [roles.includes('owner'), roles.includes('admin'), roles.includes('member'), policy.apiKey].map((b) =>
        b ? 'yes' : 'no',
      ),
      permission,
    )
  }
})

test.run()
