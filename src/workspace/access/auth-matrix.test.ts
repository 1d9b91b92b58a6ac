import { assert, suite } from '../../../tests/harness.ts'
import { impliedErrorStatuses } from '../../core/http-app.ts'
import { declaredRoutes, type AnyRoute } from '../../core/route.ts'
import { workspaceValidation } from '../app.ts'
import { workspaceAuth, type Principal, type WorkspaceRule } from './auth.ts'
import { scopeRank, type Scope } from './scopes.ts'
import { CLIENT_TOKEN, HOST_TOKEN, startTestServer, type Init } from '../testing/test-kit.ts'
import { UNLISTED_RULE } from '../sidecar/sidecar-auth.ts'

const test = suite('workspace/auth-matrix', { timeoutMs: 60_000 })

type Credential = 'none' | 'bad token' | 'expired token' | 'viewer' | 'collaborator' | 'owner bearer' | 'host header'
const CREDENTIALS: Credential[] = [
  'none',
  'bad token',
  'expired token',
  'viewer',
  'collaborator',
  'owner bearer',
  'host header',
]
const SCOPE_OF: Partial<Record<Credential, Scope>> = {
  viewer: 'viewer',
  collaborator: 'collaborator',
  'owner bearer': 'owner',
}

/** What the declaration says a credential gets: 401, 403, or through to the handler. */
function expected(rule: WorkspaceRule, credential: Credential): 401 | 403 | 'pass' {
  if (rule.kind === 'none') return 'pass'
  if (credential === 'none' || credential === 'bad token' || credential === 'expired token') return 401
  if (rule.kind === 'host') {
    if (credential === 'host header' || credential === 'owner bearer') return 'pass'
    return 403
  }
  if (credential === 'host header') return 401
  return scopeRank(SCOPE_OF[credential]!) >= scopeRank(rule.scope) ? 'pass' : 403
}

function concretePath(path: string, wsId: string): string {
  return path
    .replace(':id', wsId)
    .replace(':tokenId', 'tok_missing')
    .replace(':approvalId', 'apr_missing')
    .replace(/:name/, 'does-not-exist')
    .replace(/:\w+\+?/g, 'x')
}

test('every route answers every credential with the status its declaration implies', async () => {
  const s = await startTestServer()
  try {
    const issue = async (scope: Scope, ttlSeconds?: number) => {
      const res = await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope, ttlSeconds } })
      assert.is(res.status, 201)
      return (await res.json()).token as string
    }
    const tokens: Record<Credential, Init> = {
      none: {},
      'bad token': { token: 'svc_tk_not-a-real-token' },
      'expired token': { token: await issue('owner', 60) },
      viewer: { token: await issue('viewer') },
      collaborator: { token: await issue('collaborator') },
      'owner bearer': { token: await issue('owner') },
      'host header': { hostToken: HOST_TOKEN },
    }
    s.clock.advance(120_000)
    const auth = workspaceAuth({ resolveBearer: () => null, isHostToken: () => false })
    const routes = declaredRoutes(s.app.routes as ReadonlyArray<AnyRoute<WorkspaceRule, Principal>>)
    assert.ok(routes.length >= 30, `expected the full route table, got ${routes.length}`)
    let checked = 0
    for (const route of routes) {
      const documented = new Set([
        ...Object.keys(route.responses).map(Number),
        ...impliedErrorStatuses(route, auth, workspaceValidation),
      ])
      for (const credential of CREDENTIALS) {
        const want = expected(route.auth, credential)
        const res = await s.req(concretePath(route.path, s.wsId), { method: route.method, ...tokens[credential] })
        const label = `${route.method} ${route.path} with ${credential}`
        if (want === 'pass') {
          assert.ok(![401, 403, 429].includes(res.status), `${label}: got ${res.status}`)
        } else {
          assert.is(res.status, want, label)
          const body = await res.json()
          // The sidecar's host-only fallback names its own refusal (the route is not on the allow-list).
          const refusal = route.auth === UNLISTED_RULE ? 'sidecar_route_not_allowed' : 'forbidden'
          assert.is(body.code, want === 401 ? 'unauthorized' : refusal, label)
          if (want === 403) assert.ok(body.details?.required, `${label}: 403 names the required scope`)
        }
        assert.ok(documented.has(res.status), `${label}: status ${res.status} is documented`)
        if (!res.bodyUsed) await res.body?.cancel()
        checked++
      }
    }
    assert.ok(checked >= 30 * CREDENTIALS.length)
  } finally {
    await s.dispose()
  }
})

test('an expired token is refused with its own message and the configured client token is a collaborator', async () => {
  const s = await startTestServer()
  try {
    const created = await (
      await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope: 'viewer', ttlSeconds: 10 } })
    ).json()
    assert.is((await s.req('/workspaces', { token: created.token })).status, 200)
    s.clock.advance(11_000)
    const expired = await s.req('/workspaces', { token: created.token })
    assert.is(expired.status, 401)
    assert.is((await expired.json()).message, 'Token expired')
    const forbidden = await s.req('/tokens', { token: CLIENT_TOKEN })
    assert.is(forbidden.status, 403)
    assert.equal((await forbidden.json()).details, { required: 'owner', scope: 'collaborator' })
  } finally {
    await s.dispose()
  }
})

test.run()
