/**
 * Every state-changing route of the control plane's route table (whatever module declares it, and
 * routes added later) leaves exactly one audit event per request, found by its request id: one
 * request per route, as an owner with a session of its own; most fail (made-up ids, empty bodies),
 * which is fine as long as the failure is recorded with its outcome.
 */
import { newId } from '../../core/ids.ts'
import { declaredRoutes, isRawBody, type AnyRoute } from '../../core/route.ts'
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { AUDITED_READS, originOf } from './audited-surface.ts'

const test = suite('audit log: every write route records one event', { timeoutMs: 300_000 })

/** Successful requests of these leave only what their handler records (audited-surface.ts). */
const QUIET_ON_SUCCESS = new Set(['POST /v1/workers/:workerId/heartbeat', 'POST /mcp'])

/** A well-formed value for a path parameter: an id of the prefix its schema asks for, else a word. */
function paramValue(route: AnyRoute, name: string): string {
  const entries = (
    route.params as { entries?: Record<string, { pipe?: Array<{ type: string; requirement?: unknown }> }> }
  )?.entries
  for (const action of entries?.[name]?.pipe ?? []) {
    if (action.type === 'regex' && action.requirement instanceof RegExp) {
      const prefix = /^\^\(?([a-z]+)_/.exec(action.requirement.source)?.[1]
      if (prefix) return newId(prefix)
    }
  }
  return 'x'
}

function pathOf(route: AnyRoute): string {
  return route.path.replace(/:([A-Za-z0-9_]+)(\+|\?)?/g, (_all, name: string, modifier?: string) =>
    modifier === '+' ? 'a/b' : paramValue(route, name),
  )
}

test('each POST, PUT, PATCH and DELETE route (and each state-changing GET) writes exactly one event with the request id and an outcome', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'every')
    const routes = declaredRoutes(t.app.contract.routes).filter(
      (route) => route.method !== 'GET' || AUDITED_READS.has(`${route.method} ${route.path}`),
    )
    assert.ok(routes.length > 60, `only ${routes.length} write routes found`)
    // Routes whose rule takes another credential get one: a SCIM token for the `/scim/v2` routes.
    const scim = await t.client.post('/v1/org/scim-tokens', { token: org.owner.token, json: { name: 'every' } })
    const bearerFor: Record<string, string> = { scim: scim.body.token }
    const problems: string[] = []
    const seen: string[] = []
    let index = 0
    for (const route of routes) {
      // A session of its own: a route may end the session it is called with (sign-out).
      const signedIn = await t.client.post('/v1/auth/sign-in', {
        json: { email: org.owner.email, password: org.owner.password },
      })
      const token: string = signedIn.body.session.token
      const requestId = `every-${index++}-${route.operationId}`
      const headers: Record<string, string> = {
        'x-request-id': requestId,
        authorization: `Bearer ${bearerFor[(route.auth as { kind: string }).kind] ?? token}`,
        'x-service-org-id': org.orgId,
      }
      let body: BodyInit | undefined
      if (route.body && isRawBody(route.body)) {
        headers['content-type'] = route.body.contentType
        body = new Uint8Array(0)
      } else if (route.body || (route.method !== 'DELETE' && route.method !== 'GET')) {
        headers['content-type'] = 'application/json'
        body = '{}'
      }
      const response = await t.app.fetch(
        new Request(`http://plane.test${pathOf(route)}`, { method: route.method, headers, body }),
      )
      await response.body?.cancel()
      const events = await t.app.database.db
        .selectFrom('audit_event')
        .select(['action', 'outcome', 'error_code', 'route', 'origin', 'org_id'])
        .where('request_id', '=', requestId)
        .execute()
      const template = `${route.method} ${route.path}`
      const kind = (route.auth as { kind: string }).kind
      seen.push(
        `${template} ${response.status} ${events.map((e) => `${e.action}/${e.error_code}`).join(',')} ${events[0]?.outcome}`,
      )
      if (QUIET_ON_SUCCESS.has(template) && response.status < 400) {
        if (events.some((e) => e.outcome !== 'success')) problems.push(`${template}: ${JSON.stringify(events)}`)
        continue
      }
      // The SSO callback answers refusals as a redirect to the console naming `sso_error`: denied.
      const refusedRedirect = /[#&]sso_error=/.test(response.headers.get('location') ?? '')
      const want = refusedRedirect
        ? 'denied'
        : response.status < 400
          ? 'success'
          : response.status === 401 || response.status === 403
            ? 'denied'
            : 'failed'
      if (events.length !== 1 || events[0]!.outcome !== want)
        problems.push(`${template} answered ${response.status}: ${JSON.stringify(events)}`)
      else if (want !== 'success' && !events[0]!.error_code) problems.push(`${template}: no error code`)
      else if (events[0]!.origin !== originOf(route.path, new Request('http://plane.test/')))
        problems.push(`${template}: origin ${events[0]!.origin}`)
      else if (!['public', 'workerToken'].includes(kind) && events[0]!.org_id !== org.orgId)
        problems.push(`${template}: organization ${events[0]!.org_id}`)
    }
    if (process.env.AUDIT_ROUTES_VERBOSE) console.log(seen.join('\n'))
    assert.equal(problems, [], `routes without exactly one event:\n${problems.join('\n')}`)
    const outcomes = new Set(seen.map((line) => line.split(' ').at(-1)))
    assert.ok(outcomes.has('success') && outcomes.has('failed'), 'the enumeration reached handlers')
  } finally {
    await t.close()
  }
})

test.run()
