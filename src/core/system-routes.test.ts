import * as v from 'valibot'
import { assert, request, suite } from '../../tests/harness.ts'
import { createHttpApp, type SurfaceAuth } from './http-app.ts'
import { createLogger } from './logger.ts'
import { type DatabaseHealthCheck, HealthSchema, systemRoutes } from './system-routes.ts'

const auth: SurfaceAuth<'public', null> = {
  authenticate: () => null,
  security: () => [],
  statuses: () => [],
}

function healthApp(options: {
  version?: string
  mode?: 'workspace' | 'control-plane'
  database?: DatabaseHealthCheck
}) {
  return createHttpApp({
    routes: systemRoutes({
      mode: options.mode ?? 'workspace',
      version: options.version ?? '1.2.3',
      publicRule: 'public',
      startedAt: performance.now(),
      openapi: () => ({}),
      database: options.database,
    }),
    auth,
    validation: { status: 422, bodyCode: 'validation_failed', queryCode: 'validation_failed' },
    cors: { origins: [], allowHeaders: [] },
    logger: createLogger({ format: 'json', write: () => {} }),
  })
}

/** The body both ways a `/health` request is answered: through the pipeline and the listener's direct route. */
async function bodies(app: ReturnType<typeof healthApp>): Promise<unknown[]> {
  const viaPipeline = await request(app.fetch, '/health')
  const viaDirect = await app.direct[0]!.fetch(new Request('http://127.0.0.1/health'))
  const out: unknown[] = []
  for (const res of [viaPipeline, viaDirect]) {
    assert.is(res.status, 200)
    assert.is(res.headers.get('content-type'), 'application/json; charset=utf-8')
    assert.is(res.headers.get('x-content-type-options'), 'nosniff')
    assert.ok(res.headers.get('x-request-id'))
    out.push(JSON.parse(await res.text()))
  }
  return out
}

const test = suite('system routes')

test('the health body is valid JSON matching its schema, without a database and with each database state', async () => {
  const cases: Array<[DatabaseHealthCheck | undefined, string | undefined]> = [
    [undefined, undefined],
    [() => 'ok', 'ok'],
    [() => 'unavailable', 'unavailable'],
    [() => Promise.resolve('unavailable' as const), 'unavailable'],
  ]
  for (const [database, expected] of cases) {
    for (const body of await bodies(healthApp({ mode: 'control-plane', database }))) {
      const parsed = v.parse(HealthSchema, body)
      assert.equal(
        Object.keys(parsed),
        expected ? ['ok', 'version', 'mode', 'uptimeMs', 'database'] : ['ok', 'version', 'mode', 'uptimeMs'],
      )
      assert.is(parsed.mode, 'control-plane')
      assert.is(parsed.database, expected)
      assert.ok(Number.isInteger(parsed.uptimeMs) && parsed.uptimeMs >= 0)
    }
  }
})

test('a version string that needs escaping still yields valid JSON', async () => {
  const version = '1.0.0-"quoted"\\back\nline'
  for (const body of await bodies(healthApp({ version }))) {
    assert.is(v.parse(HealthSchema, body).version, version)
  }
})

test.run()
