import { createHash, randomBytes } from 'node:crypto'
import { assert, suite } from '../../../tests/harness.ts'
import type { ContractClient } from '../testing/contract-client.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { postForm } from './oauth-test-kit.ts'

const test = suite('control-plane/oauth/authorization-code')

const REDIRECT = 'http://127.0.0.1:33418/callback'
const RESOURCE = 'http://contract.test/mcp'

function pkce() {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

async function register(
  client: ContractClient,
  body: unknown = { redirect_uris: [REDIRECT], client_name: 'Test MCP' },
) {
  return client.post('/oauth/register', { json: body })
}

function authorizeUrl(params: Record<string, string>) {
  return `/oauth/authorize?${new URLSearchParams(params).toString()}`
}

/** Runs authorize → consent → approve; answers the code and the client. */
async function authorize(client: ContractClient, sessionToken: string, extra: Record<string, string> = {}) {
  const registered = await register(client)
  const { verifier, challenge } = pkce()
  const started = await client.get(
    authorizeUrl({
      response_type: 'code',
      client_id: registered.body.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'xyz',
      resource: RESOURCE,
      ...extra,
    }),
  )
  if (started.status !== 302) throw new Error(`authorize answered ${started.status}: ${JSON.stringify(started.body)}`)
  const id = /#consent=(oaz_[0-9a-z]+)$/.exec(started.headers.get('location')!)![1]!
  const approved = await client.post(`/v1/oauth/authorizations/${id}/approve`, { token: sessionToken, json: {} })
  if (approved.status !== 200) throw new Error(`approve answered ${approved.status}: ${JSON.stringify(approved.body)}`)
  const back = new URL(approved.body.redirectTo)
  return { clientId: registered.body.client_id as string, code: back.searchParams.get('code')!, verifier, back, id }
}

function exchange(client: ContractClient, fields: Record<string, string>) {
  return postForm(client, '/oauth/token', { grant_type: 'authorization_code', redirect_uri: REDIRECT, ...fields })
}

test('the metadata document names every endpoint under the issuer and supports PKCE S256 only', async () => {
  const t = await startTestControlPlane()
  try {
    const res = await t.client.get('/.well-known/oauth-authorization-server')
    assert.is(res.status, 200)
    assert.is(res.body.issuer, 'http://contract.test')
    assert.is(res.body.authorization_endpoint, 'http://contract.test/oauth/authorize')
    assert.is(res.body.token_endpoint, 'http://contract.test/oauth/token')
    assert.is(res.body.registration_endpoint, 'http://contract.test/oauth/register')
    assert.is(res.body.device_authorization_endpoint, 'http://contract.test/oauth/device_authorization')
    assert.equal(res.body.code_challenge_methods_supported, ['S256'])
    assert.equal(res.body.token_endpoint_auth_methods_supported, ['none'])
    assert.ok(res.body.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:device_code'))
  } finally {
    await t.close()
  }
})

test('registration accepts https and loopback http redirect URIs only, public clients only, and is bounded per address', async () => {
  const t = await startTestControlPlane({ trustProxy: true })
  try {
    const ok = await register(t.client, {
      redirect_uris: ['https://app.example/cb', 'http://localhost:8080/cb', 'http://[::1]/cb'],
    })
    assert.is(ok.status, 201)
    assert.match(ok.body.client_id, /^ocl_/)
    assert.is(ok.body.token_endpoint_auth_method, 'none')
    assert.is(ok.body.client_name, 'Unnamed MCP client')
    assert.is(ok.body.scope, 'delivery:read catalog:read catalog:write')
    for (const uri of [
      'http://app.example/cb',
      'https://app.example/cb#x',
      'javascript:alert(1)',
      'https://user:pw@app.example/',
      'custom:/cb',
    ]) {
      const res = await register(t.client, { redirect_uris: [uri] })
      assert.is(res.status, 400, uri)
      assert.is(res.body.error, 'invalid_redirect_uri', uri)
    }
    assert.is((await register(t.client, { redirect_uris: [] })).body.error, 'invalid_redirect_uri')
    assert.is(
      (await register(t.client, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' })).body
        .error,
      'invalid_client_metadata',
    )
    assert.is(
      (await register(t.client, { redirect_uris: [REDIRECT], grant_types: ['password'] })).body.error,
      'invalid_client_metadata',
    )
    assert.is(
      (await register(t.client, { redirect_uris: [REDIRECT], scope: 'root' })).body.error,
      'invalid_client_metadata',
    )
    const notJson = await t.client.post('/oauth/register', {
      body: 'x',
      headers: { 'content-type': 'application/json' },
    })
    assert.is(notJson.body.error, 'invalid_client_metadata')

    const from = { 'x-forwarded-for': '203.0.113.9' }
    for (let i = 0; i < 20; i++)
      assert.is(
        (await t.client.post('/oauth/register', { json: { redirect_uris: [REDIRECT] }, headers: from })).status,
        201,
      )
    const limited = await t.client.post('/oauth/register', { json: { redirect_uris: [REDIRECT] }, headers: from })
    assert.is(limited.status, 429)
    assert.is(limited.body.error, 'temporarily_unavailable')
    const elsewhere = await t.client.post('/oauth/register', {
      json: { redirect_uris: [REDIRECT] },
      headers: { 'x-forwarded-for': '203.0.113.10' },
    })
    assert.is(elsewhere.status, 201, 'the limit is per address')
    t.clock.advance(3600_001)
    assert.is(
      (await t.client.post('/oauth/register', { json: { redirect_uris: [REDIRECT] }, headers: from })).status,
      201,
    )
  } finally {
    await t.close()
  }
})

test('authorization code with PKCE end to end: consent page, approval, a one-hour token bound to the resource, refresh rotation', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'code')
    const registered = await register(t.client)
    const { verifier, challenge } = pkce()
    const started = await t.client.get(
      authorizeUrl({
        response_type: 'code',
        client_id: registered.body.client_id,
        redirect_uri: REDIRECT,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        scope: 'catalog:read',
        state: 's1',
        resource: RESOURCE,
      }),
    )
    assert.is(started.status, 302)
    const location = started.headers.get('location')!
    assert.match(location, /^http:\/\/contract\.test\/console\/#consent=oaz_/)
    const id = location.split('=')[1]!
    const shown = await t.client.get(`/v1/oauth/authorizations/${id}`, { token: org.member.token })
    assert.is(shown.status, 200)
    assert.equal(shown.body.client, { id: registered.body.client_id, name: 'Test MCP' })
    assert.equal(
      shown.body.scopes.map((s: { scope: string }) => s.scope),
      ['catalog:read'],
    )
    assert.is(shown.body.resource, RESOURCE)
    assert.is(shown.body.redirectUri, REDIRECT)
    assert.equal(shown.body.organization, { id: org.orgId, name: 'Org code' })
    const byKey = await t.client.post(`/v1/oauth/authorizations/${id}/approve`, { apiKey: org.ownerKey.key, json: {} })
    assert.is(byKey.status, 403)
    const approved = await t.client.post(`/v1/oauth/authorizations/${id}/approve`, {
      token: org.member.token,
      json: {},
    })
    assert.is(approved.status, 200)
    const back = new URL(approved.body.redirectTo)
    assert.is(`${back.origin}${back.pathname}`, REDIRECT)
    assert.is(back.searchParams.get('state'), 's1')
    assert.is(back.searchParams.get('iss'), 'http://contract.test')
    const code = back.searchParams.get('code')!
    assert.match(code, /^oac_/)
    assert.is(
      (await t.client.get(`/v1/oauth/authorizations/${id}`, { token: org.member.token })).status,
      404,
      'decided',
    )

    const token = await exchange(t.client, {
      code,
      client_id: registered.body.client_id,
      code_verifier: verifier,
      resource: RESOURCE,
    })
    assert.is(token.status, 200)
    assert.is(token.body.expires_in, 3600)
    assert.is(token.body.scope, 'catalog:read')
    assert.equal(token.body.organization, { id: org.orgId, name: 'Org code' })
    assert.is(
      (await t.client.get('/v1/config-objects', { token: token.body.access_token })).status,
      200,
      'catalog:read reads the catalog',
    )
    const write = await t.client.post('/v1/config-objects', { token: token.body.access_token, json: {} })
    assert.is(write.status, 403)
    assert.is(write.body.code, 'insufficient_scope')
    const list = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(list.body.items[0].resource, RESOURCE)
    assert.is(list.body.items[0].clientName, 'Test MCP')
    t.clock.advance(3600_001)
    assert.is(
      (await t.client.get('/v1/me', { token: token.body.access_token })).status,
      401,
      'access tokens live one hour',
    )
    const refreshed = await postForm(t.client, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: token.body.refresh_token,
      client_id: registered.body.client_id,
    })
    assert.is(refreshed.status, 200)
    assert.is((await t.client.get('/v1/me', { token: refreshed.body.access_token })).status, 200)
  } finally {
    await t.close()
  }
})

test('the code exchange refuses a wrong verifier, redirect URI, client or resource, an expired code, and a replay, which revokes what the code issued', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'pkce')
    const a = await authorize(t.client, org.member.token)
    const wrongVerifier = await exchange(t.client, {
      code: a.code,
      client_id: a.clientId,
      code_verifier: pkce().verifier,
    })
    assert.is(wrongVerifier.body.error, 'invalid_grant')
    const shortVerifier = await exchange(t.client, { code: a.code, client_id: a.clientId, code_verifier: 'short' })
    assert.is(shortVerifier.body.error, 'invalid_request')
    const wrongRedirect = await exchange(t.client, {
      code: a.code,
      client_id: a.clientId,
      code_verifier: a.verifier,
      redirect_uri: 'http://127.0.0.1:33418/other',
    })
    assert.is(wrongRedirect.body.error, 'invalid_grant')
    const other = await register(t.client)
    const wrongClient = await exchange(t.client, {
      code: a.code,
      client_id: other.body.client_id,
      code_verifier: a.verifier,
    })
    assert.is(wrongClient.body.error, 'invalid_grant')
    const wrongResource = await exchange(t.client, {
      code: a.code,
      client_id: a.clientId,
      code_verifier: a.verifier,
      resource: 'http://contract.test/elsewhere',
    })
    assert.is(wrongResource.body.error, 'invalid_target')
    const good = await exchange(t.client, { code: a.code, client_id: a.clientId, code_verifier: a.verifier })
    assert.is(good.status, 200, 'failed attempts do not use the code up')
    const replay = await exchange(t.client, { code: a.code, client_id: a.clientId, code_verifier: a.verifier })
    assert.is(replay.body.error, 'invalid_grant')
    assert.is(
      (await t.client.get('/v1/me', { token: good.body.access_token })).status,
      401,
      'a replayed code revokes its tokens',
    )
    const list = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(list.body.items[0].revokedReason, 'code_reuse')

    const late = await authorize(t.client, org.member.token)
    t.clock.advance(60_001)
    assert.is(
      (await exchange(t.client, { code: late.code, client_id: late.clientId, code_verifier: late.verifier })).body
        .error,
      'invalid_grant',
    )
  } finally {
    await t.close()
  }
})

test('authorize answers an unknown client or redirect URI itself and every other error through the redirect; deny redirects with access_denied', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'authz')
    const other = await buildFixtureOrg(t.client, 'authz-other')
    const registered = await register(t.client)
    const { challenge } = pkce()
    const base = {
      response_type: 'code',
      client_id: registered.body.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st',
    }
    const unknown = await t.client.get(authorizeUrl({ ...base, client_id: 'ocl_nobody' }))
    assert.is(unknown.status, 400)
    assert.is(unknown.body.error, 'invalid_client')
    const unregistered = await t.client.get(authorizeUrl({ ...base, redirect_uri: 'https://evil.example/cb' }))
    assert.is(unregistered.status, 400)
    assert.is(unregistered.headers.get('location'), null, 'never redirected to an unregistered URI')
    const cases: Array<[Record<string, string>, string]> = [
      [{ code_challenge: '' }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ scope: 'everything' }, 'invalid_scope'],
      [{ resource: 'https://x.example/mcp#f' }, 'invalid_target'],
    ]
    for (const [change, error] of cases) {
      const res = await t.client.get(authorizeUrl({ ...base, ...change }))
      assert.is(res.status, 302, error)
      const back = new URL(res.headers.get('location')!)
      assert.is(`${back.origin}${back.pathname}`, REDIRECT)
      assert.is(back.searchParams.get('error'), error)
      assert.is(back.searchParams.get('state'), 'st')
    }
    const started = await t.client.get(authorizeUrl(base))
    const id = started.headers.get('location')!.split('=')[1]!
    const foreign = await t.client.post(`/v1/oauth/authorizations/${id}/approve`, {
      token: org.member.token,
      json: { orgId: other.orgId },
    })
    assert.is(foreign.status, 404)
    assert.is(foreign.body.code, 'organization_not_found')
    const denied = await t.client.post(`/v1/oauth/authorizations/${id}/deny`, { token: org.member.token })
    assert.is(denied.status, 200)
    const back = new URL(denied.body.redirectTo)
    assert.is(back.searchParams.get('error'), 'access_denied')
    assert.is(back.searchParams.get('state'), 'st')
    assert.is(
      (await t.client.post(`/v1/oauth/authorizations/${id}/approve`, { token: org.member.token, json: {} })).status,
      404,
    )

    const slow = await t.client.get(authorizeUrl(base))
    const slowId = slow.headers.get('location')!.split('=')[1]!
    t.clock.advance(600_001)
    assert.is(
      (await t.client.get(`/v1/oauth/authorizations/${slowId}`, { token: org.member.token })).status,
      404,
      'consent waits 10 minutes',
    )
  } finally {
    await t.close()
  }
})

test.run()
