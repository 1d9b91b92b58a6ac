import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { storedText } from '../testing/stored-text.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { newUserCode, normalizeUserCode } from './device-grant.ts'
import { DEVICE_CODE_GRANT } from './oauth-clients.ts'
import { pollDevice, postForm, startDevice } from './oauth-test-kit.ts'

const test = suite('control-plane/oauth/device-grant')

test('user codes are XXXX-XXXX from an unambiguous alphabet and are typed forgivingly', () => {
  const seen = new Set<string>()
  for (let i = 0; i < 200; i++) {
    const code = newUserCode()
    assert.match(code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
    seen.add(code)
  }
  assert.ok(seen.size > 190, 'codes do not repeat')
  assert.is(normalizeUserCode(' bcdf-ghjk '), 'BCDFGHJK')
  assert.is(normalizeUserCode('BCDFGHJK'), 'BCDFGHJK')
  assert.is(normalizeUserCode('BCDF-GHJ0'), null, 'a digit is never in a code')
  assert.is(normalizeUserCode('BCDF-GHJ'), null)
})

test('a device sign-in runs end to end: shown code, approval for the member’s organization, organization-bound tokens that read /v1/me; codes and tokens are hashed at rest', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'dev')
    const started = await startDevice(t.client, 'opencode')
    assert.match(started.device_code, /^odc_/)
    assert.is(started.expires_in, 600)
    assert.is(started.interval, 5)
    const res = await postForm(t.client, '/oauth/device_authorization', { client_id: 'service-cli' })
    assert.is(res.headers.get('cache-control'), 'no-store')
    assert.is(res.body.verification_uri, 'http://contract.test/console/#device')
    assert.is(res.body.verification_uri_complete, `http://contract.test/console/#device=${res.body.user_code}`)

    const shown = await t.client.get(`/v1/oauth/device?userCode=${started.user_code.toLowerCase()}`, {
      token: org.member.token,
    })
    assert.is(shown.status, 200)
    assert.equal(shown.body.client, { id: 'opencode', name: 'OpenCode' })
    assert.equal(
      shown.body.scopes.map((s: { scope: string }) => s.scope),
      ['delivery:read'],
    )
    assert.equal(shown.body.organization, { id: org.orgId, name: 'Org dev' })

    const approved = await t.client.post('/v1/oauth/device/approve', {
      token: org.member.token,
      json: { userCode: started.user_code.replace('-', '') },
    })
    assert.is(approved.status, 200)
    assert.equal(approved.body.organization, { id: org.orgId, name: 'Org dev' })
    const token = await pollDevice(t.client, started.device_code)
    assert.is(token.status, 200)
    assert.is(token.headers.get('cache-control'), 'no-store')
    assert.match(token.body.access_token, /^oat_/)
    assert.match(token.body.refresh_token, /^ort_/)
    assert.is(token.body.token_type, 'Bearer')
    assert.is(token.body.scope, 'delivery:read')
    assert.is(token.body.expires_in, 90 * 24 * 3600)
    assert.equal(token.body.organization, { id: org.orgId, name: 'Org dev' })

    const me = await t.client.get('/v1/me', { token: token.body.access_token })
    assert.is(me.status, 200)
    assert.is(me.body.user.id, org.member.userId)
    assert.is(me.body.credential.kind, 'oauth')
    assert.is(me.body.credential.clientId, 'opencode')
    assert.equal(me.body.credential.scopes, ['delivery:read'])
    assert.equal(me.body.member.permissions, ['delivery.read'])

    const again = await pollDevice(t.client, started.device_code)
    assert.is(again.status, 400)
    assert.is(again.body.error, 'invalid_grant', 'a device code yields tokens once')

    const stored = await storedText(t.app)
    for (const secret of [
      started.device_code,
      started.user_code,
      started.user_code.replace('-', ''),
      token.body.access_token,
      token.body.refresh_token,
    ])
      assert.not.ok(stored.includes(secret), 'no code or token is stored in clear')
  } finally {
    await t.close()
  }
})

test('polling before approval is authorization_pending; faster than the interval is slow_down, and the interval grows by 5 s', async () => {
  const t = await startTestControlPlane()
  try {
    await buildFixtureOrg(t.client, 'poll')
    const started = await startDevice(t.client)
    const first = await pollDevice(t.client, started.device_code)
    assert.is(first.status, 400)
    assert.is(first.body.error, 'authorization_pending')
    t.clock.advance(2000)
    const fast = await pollDevice(t.client, started.device_code)
    assert.is(fast.body.error, 'slow_down')
    t.clock.advance(6000)
    const stillFast = await pollDevice(t.client, started.device_code)
    assert.is(stillFast.body.error, 'slow_down', 'the interval is now 10 s, and becomes 15 s')
    t.clock.advance(15_000)
    const patient = await pollDevice(t.client, started.device_code)
    assert.is(patient.body.error, 'authorization_pending')
  } finally {
    await t.close()
  }
})

test('a denied request answers access_denied, an unapproved one expired_token after 10 minutes, and neither can be approved afterwards', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'deny')
    const denied = await startDevice(t.client)
    const deny = await t.client.post('/v1/oauth/device/deny', {
      token: org.member.token,
      json: { userCode: denied.user_code },
    })
    assert.is(deny.status, 204)
    const refused = await pollDevice(t.client, denied.device_code)
    assert.is(refused.status, 400)
    assert.is(refused.body.error, 'access_denied')
    const late = await t.client.post('/v1/oauth/device/approve', {
      token: org.member.token,
      json: { userCode: denied.user_code },
    })
    assert.is(late.status, 404)
    assert.is(late.body.code, 'oauth_device_request_not_found')

    const slow = await startDevice(t.client)
    t.clock.advance(600_001)
    const expired = await pollDevice(t.client, slow.device_code)
    assert.is(expired.body.error, 'expired_token')
    const tooLate = await t.client.post('/v1/oauth/device/approve', {
      token: org.member.token,
      json: { userCode: slow.user_code },
    })
    assert.is(tooLate.status, 404)

    // Approved but collected after the request expired: expired_token too, never tokens.
    const unclaimed = await startDevice(t.client)
    await t.client.post('/v1/oauth/device/approve', {
      token: org.member.token,
      json: { userCode: unclaimed.user_code },
    })
    t.clock.advance(600_001)
    assert.is((await pollDevice(t.client, unclaimed.device_code)).body.error, 'expired_token')
  } finally {
    await t.close()
  }
})

test('the OAuth endpoints answer every malformed request with the RFC error and no tokens', async () => {
  const t = await startTestControlPlane()
  try {
    const json = await t.client.post('/oauth/device_authorization', { json: { client_id: 'opencode' } })
    assert.is(json.status, 400)
    assert.is(json.body.error, 'invalid_request')
    const repeated = await t.client.post('/oauth/device_authorization', {
      body: 'client_id=opencode&client_id=opencode',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assert.is(repeated.body.error, 'invalid_request')
    const missing = await postForm(t.client, '/oauth/device_authorization', {})
    assert.is(missing.body.error, 'invalid_request')
    const unknown = await postForm(t.client, '/oauth/device_authorization', { client_id: 'nobody' })
    assert.is(unknown.status, 401)
    assert.is(unknown.body.error, 'invalid_client')
    const scope = await postForm(t.client, '/oauth/device_authorization', { client_id: 'opencode', scope: 'admin' })
    assert.is(scope.body.error, 'invalid_scope')
    const beyond = await postForm(t.client, '/oauth/device_authorization', {
      client_id: 'opencode',
      scope: 'catalog:write',
    })
    assert.is(beyond.body.error, 'invalid_scope', 'built-in clients receive delivery:read only')
    for (const resource of ['not a uri', 'https://x.test/mcp#frag', 'ftp://x.test/'])
      assert.is(
        (await postForm(t.client, '/oauth/device_authorization', { client_id: 'opencode', resource })).body.error,
        'invalid_target',
      )
    const big = await t.client.post('/oauth/token', {
      body: `grant_type=${'x'.repeat(20_000)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assert.is(big.status, 413)
    assert.is(big.body.error, 'invalid_request')
    const grant = await postForm(t.client, '/oauth/token', { grant_type: 'password', client_id: 'opencode' })
    assert.is(grant.body.error, 'unsupported_grant_type')
    const noClient = await postForm(t.client, '/oauth/token', { grant_type: DEVICE_CODE_GRANT, device_code: 'odc_x' })
    assert.is(noClient.body.error, 'invalid_request')
    const badCode = await pollDevice(t.client, 'odc_nothing')
    assert.is(badCode.body.error, 'invalid_grant')
    const started = await startDevice(t.client, 'opencode')
    const otherClient = await pollDevice(t.client, started.device_code, 'service-cli')
    assert.is(otherClient.body.error, 'invalid_grant', 'a device code is bound to its client')
  } finally {
    await t.close()
  }
})

test('approval is for signed-in sessions and the caller’s own organizations; wrong codes are throttled', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'own')
    const other = await buildFixtureOrg(t.client, 'other')
    const started = await startDevice(t.client)
    const byKey = await t.client.post('/v1/oauth/device/approve', {
      apiKey: org.ownerKey.key,
      json: { userCode: started.user_code },
    })
    assert.is(byKey.status, 403)
    assert.is(byKey.body.code, 'session_required')
    const anonymous = await t.client.post('/v1/oauth/device/approve', { json: { userCode: started.user_code } })
    assert.is(anonymous.status, 401)
    const foreign = await t.client.post('/v1/oauth/device/approve', {
      token: org.member.token,
      json: { userCode: started.user_code, orgId: other.orgId },
    })
    assert.is(foreign.status, 404)
    assert.is(foreign.body.code, 'organization_not_found')
    assert.is(
      (await pollDevice(t.client, started.device_code)).body.error,
      'authorization_pending',
      'nothing was approved',
    )

    // The owner of two organizations picks the second one explicitly.
    const second = await t.client.post('/v1/orgs', { token: org.owner.token, json: { name: 'Second' } })
    const chosen = await t.client.post('/v1/oauth/device/approve', {
      token: org.owner.token,
      json: { userCode: started.user_code, orgId: second.body.item.id },
    })
    assert.is(chosen.status, 200)
    t.clock.advance(5000)
    const token = await pollDevice(t.client, started.device_code)
    assert.equal(token.body.organization, { id: second.body.item.id, name: 'Second' })
    const inOrg = await t.client.get('/v1/me', { token: token.body.access_token, orgId: org.orgId })
    assert.is(inOrg.status, 404, 'a token acts only in the organization it was approved for')

    for (let i = 0; i < 10; i++) {
      const wrong = await t.client.get('/v1/oauth/device?userCode=BBBB-BBBB', { token: org.member.token })
      assert.is(wrong.status, 404)
    }
    const pending = await startDevice(t.client)
    const throttled = await t.client.get(`/v1/oauth/device?userCode=${pending.user_code}`, { token: org.member.token })
    assert.is(throttled.status, 429, 'after 10 wrong codes even a right one waits')
    assert.ok(Number(throttled.headers.get('retry-after')) > 0)
    const someoneElse = await t.client.get(`/v1/oauth/device?userCode=${pending.user_code}`, { token: org.admin.token })
    assert.is(someoneElse.status, 200, 'the limit is per person')
    t.clock.advance(15 * 60_000 + 1)
    const pendingAgain = await startDevice(t.client)
    assert.is(
      (await t.client.get(`/v1/oauth/device?userCode=${pendingAgain.user_code}`, { token: org.member.token })).status,
      200,
    )
  } finally {
    await t.close()
  }
})

test.run()
