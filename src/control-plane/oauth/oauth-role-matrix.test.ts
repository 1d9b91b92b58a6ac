/**
 * The role matrix of the authorization server's API routes (token lists and revocation, device
 * approval), generated from the policy table by `testing/role-matrix.ts`. Each revocation targets
 * a token the caller's own member holds, so only the policy table decides.
 */
import { assert, suite } from '../../../tests/harness.ts'
import {
  MATRIX_CALLERS,
  runRoleMatrix,
  type MatrixCaller,
  type MatrixRequests,
  type MatrixWorld,
} from '../testing/role-matrix.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { deviceTokens, startDevice } from './oauth-test-kit.ts'

const test = suite('control-plane/oauth-role-matrix', { timeoutMs: 120_000 })

const TAGS = ['oauth', 'oauth-device', 'oauth-consent', 'oauth-tokens']

/** The session of the member the caller acts as (an API key acts as its creator). */
function sessionOf(w: MatrixWorld, caller: MatrixCaller): string {
  return caller === 'admin' || caller === 'adminKey'
    ? w.org.admin.token
    : caller === 'member'
      ? w.org.member.token
      : w.org.owner.token
}

async function ownGrant(w: MatrixWorld, caller: MatrixCaller): Promise<string> {
  const tokens = await deviceTokens(w.client, sessionOf(w, caller))
  const me = await w.client.get('/v1/me', { token: tokens.access_token })
  return me.body.credential.tokenId
}

const form = (fields: Record<string, string>) => ({
  body: new TextEncoder().encode(new URLSearchParams(fields).toString()),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
})

/** A fresh pending authorization request (register, then authorize with PKCE). */
async function pendingAuthorization(w: MatrixWorld): Promise<string> {
  const redirect = 'https://client.example/cb'
  const registered = await w.client.post('/oauth/register', { json: { redirect_uris: [redirect] } })
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: registered.body.client_id,
    redirect_uri: redirect,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  })
  const started = await w.client.get(`/oauth/authorize?${query}`)
  return started.headers.get('location')!.split('=')[1]!
}

const REQUESTS: MatrixRequests = {
  oauthAuthorizationServerMetadata: async () => ({ path: '/.well-known/oauth-authorization-server' }),
  oauthRegisterClient: async () => ({
    path: '/oauth/register',
    json: { redirect_uris: ['https://client.example/cb'] },
  }),
  getAuthorizationRequest: async (w) => ({ path: `/v1/oauth/authorizations/${await pendingAuthorization(w)}` }),
  approveAuthorizationRequest: async (w) => ({
    path: `/v1/oauth/authorizations/${await pendingAuthorization(w)}/approve`,
    json: {},
  }),
  denyAuthorizationRequest: async (w) => ({ path: `/v1/oauth/authorizations/${await pendingAuthorization(w)}/deny` }),
  oauthDeviceAuthorization: async () => ({ path: '/oauth/device_authorization', ...form({ client_id: 'opencode' }) }),
  oauthToken: async (w) => {
    const tokens = await deviceTokens(w.client, w.org.member.token)
    return {
      path: '/oauth/token',
      ...form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'opencode' }),
    }
  },
  oauthRevoke: async () => ({ path: '/oauth/revoke', ...form({ token: 'oat_unknown', client_id: 'opencode' }) }),
  getDeviceRequest: async (w) => ({ path: `/v1/oauth/device?userCode=${(await startDevice(w.client)).user_code}` }),
  approveDeviceRequest: async (w) => ({
    path: '/v1/oauth/device/approve',
    json: { userCode: (await startDevice(w.client)).user_code },
  }),
  denyDeviceRequest: async (w) => ({
    path: '/v1/oauth/device/deny',
    json: { userCode: (await startDevice(w.client)).user_code },
  }),
  listMyOAuthTokens: async () => ({ path: '/v1/me/oauth-tokens' }),
  revokeMyOAuthToken: async (w, caller) => ({ path: `/v1/me/oauth-tokens/${await ownGrant(w, caller)}` }),
  listOAuthTokens: async () => ({ path: '/v1/oauth-tokens' }),
  revokeOAuthToken: async (w, caller) => ({ path: `/v1/oauth-tokens/${await ownGrant(w, caller)}` }),
}

test('every authorization-server route answers each caller with the status the policy table implies', async () => {
  const t = await startTestControlPlane()
  try {
    const { failures, missing, checked } = await runRoleMatrix(t, { requests: REQUESTS, tags: TAGS })
    assert.equal(missing, [], 'every route has a matrix entry')
    assert.equal(failures, [])
    const covered = t.app.contract.routes.filter((r) => (r.tags ?? []).some((tag) => TAGS.includes(tag)))
    assert.is(checked, covered.length * MATRIX_CALLERS.length)
  } finally {
    await t.close()
  }
})

test.run()
