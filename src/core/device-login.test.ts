import { assert, suite } from '../../tests/harness.ts'
import { deviceLogin, DeviceLoginError } from './device-login.ts'

const test = suite('core/device-login')

/** A fake control plane answering the token endpoint from a script. */
function fakeServer(answers: Array<{ status: number; body: unknown } | 'network'>) {
  const requests: Array<{ path: string; fields: Record<string, string> }> = []
  const fetchFake = (async (url: string, init: RequestInit) => {
    const path = new URL(url).pathname
    requests.push({ path, fields: Object.fromEntries(new URLSearchParams(String(init.body))) })
    if (path === '/oauth/device_authorization')
      return Response.json({
        device_code: 'odc_x',
        user_code: 'BCDF-GHJK',
        verification_uri: 'https://cp.test/console/#device',
        verification_uri_complete: 'https://cp.test/console/#device=BCDF-GHJK',
        expires_in: 600,
        interval: 5,
      })
    const next = answers.shift()
    if (!next || next === 'network') throw new TypeError('fetch failed')
    return Response.json(next.body, { status: next.status })
  }) as typeof fetch
  return { fetchFake, requests }
}

test('polls at the interval, slows down by 5 s on slow_down, retries through server errors, and returns the tokens', async () => {
  const server = fakeServer([
    { status: 400, body: { error: 'authorization_pending' } },
    { status: 400, body: { error: 'slow_down' } },
    'network',
    { status: 503, body: { error: 'temporarily_unavailable' } },
    {
      status: 200,
      body: {
        access_token: 'oat_1',
        refresh_token: 'ort_1',
        expires_in: 60,
        scope: 'delivery:read',
        organization: { id: 'org_1', name: 'Acme' },
      },
    },
  ])
  const waits: number[] = []
  const prompts: string[] = []
  const tokens = await deviceLogin({
    baseUrl: 'https://cp.test/',
    clientId: 'service-cli',
    fetch: server.fetchFake,
    sleep: async (ms) => {
      waits.push(ms)
    },
    onCode: (prompt) => prompts.push(`${prompt.userCode} ${prompt.verificationUriComplete}`),
  })
  assert.is(tokens.access_token, 'oat_1')
  assert.equal(prompts, ['BCDF-GHJK https://cp.test/console/#device=BCDF-GHJK'])
  assert.equal(waits, [5000, 5000, 10_000, 10_000, 10_000])
  assert.equal(server.requests[1]!.fields, {
    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: 'odc_x',
    client_id: 'service-cli',
  })
})

test('ends with the reason on access_denied, expired_token, an unknown client, or an unreachable server', async () => {
  const fast = { sleep: async () => {}, onCode: () => {} }
  const denied = fakeServer([{ status: 400, body: { error: 'access_denied' } }])
  const error = await deviceLogin({
    baseUrl: 'https://cp.test',
    clientId: 'c',
    fetch: denied.fetchFake,
    ...fast,
  }).catch((e) => e)
  assert.instance(error, DeviceLoginError)
  assert.is(error.code, 'access_denied')
  const expired = fakeServer([{ status: 400, body: { error: 'expired_token' } }])
  assert.is(
    (
      await deviceLogin({ baseUrl: 'https://cp.test', clientId: 'c', fetch: expired.fetchFake, ...fast }).catch(
        (e) => e,
      )
    ).code,
    'expired_token',
  )
  const pendingForever = fakeServer(
    Array.from({ length: 200 }, () => ({ status: 400, body: { error: 'authorization_pending' } })),
  )
  assert.is(
    (
      await deviceLogin({ baseUrl: 'https://cp.test', clientId: 'c', fetch: pendingForever.fetchFake, ...fast }).catch(
        (e) => e,
      )
    ).code,
    'expired_token',
    'gives up when the code has expired',
  )
  const unknown = (async () =>
    Response.json(
      { error: 'invalid_client', error_description: 'Unknown client_id' },
      { status: 401 },
    )) as unknown as typeof fetch
  const refused = await deviceLogin({ baseUrl: 'https://cp.test', clientId: 'x', fetch: unknown, ...fast }).catch(
    (e) => e,
  )
  assert.is(refused.code, 'invalid_client')
  assert.match(refused.message, /Unknown client_id/)
  const down = (async () => {
    throw new TypeError('fetch failed')
  }) as unknown as typeof fetch
  assert.is(
    (await deviceLogin({ baseUrl: 'https://cp.test', clientId: 'x', fetch: down, ...fast }).catch((e) => e)).code,
    'unreachable',
  )
})

test.run()
