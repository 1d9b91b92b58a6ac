import { assert, suite } from '../../../tests/harness.ts'
import { newId } from '../../core/ids.ts'
import { FakeOidcProvider } from '../testing/fake-oidc-provider.ts'
import { ownerScimToken, scimClient } from '../scim/scim-test-kit.ts'
import { NO_PASSWORD } from './sso-accounts.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/sso', { timeoutMs: 60_000 })

interface World {
  t: TestControlPlane
  org: FixtureOrg
  idp: FakeOidcProvider
  teamId: string
  close(): Promise<void>
}

async function world(): Promise<World> {
  const t = await startTestControlPlane()
  const idp = await FakeOidcProvider.start()
  try {
    const org = await buildFixtureOrg(t.client, 'sso')
    const team = await t.client.post('/v1/teams', { token: org.owner.token, json: { name: 'Engineering' } })
    assert.is(team.status, 201)
    const saved = await t.client.put('/v1/org/sso', {
      token: org.owner.token,
      json: {
        slug: 'corp',
        displayName: 'Corp IdP',
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        allowedDomains: ['corp.test'],
        defaultRole: 'member',
        defaultTeamId: team.body.item.id,
      },
    })
    assert.is(saved.status, 201, JSON.stringify(saved.body))
    return {
      t,
      org,
      idp,
      teamId: team.body.item.id,
      async close() {
        await idp.close()
        await t.close()
      },
    }
  } catch (error) {
    await idp.close()
    await t.close()
    throw error
  }
}

/** The `name=value` of the binding cookie a response sets. */
function cookieOf(headers: Headers): string {
  const set = headers.get('set-cookie') ?? ''
  assert.match(set, /^sso_binding=[^;]+; Path=\/v1\/sso\/; HttpOnly; SameSite=Lax/)
  return set.split(';')[0]!
}

/**
 * Start → provider → callback, as a browser would follow them (carrying the binding cookie);
 * returns the callback's redirect. A provider URL from the link route comes with its cookie.
 */
async function throughProvider(
  w: World,
  startPath: string,
  linkCookie?: string,
): Promise<{ location: string; callback: string; cookie: string }> {
  const start = startPath.startsWith('http') ? null : await w.t.client.get(startPath)
  const toProvider = start ? start.headers.get('location')! : startPath
  if (start) assert.is(start.status, 302)
  const cookie = start ? cookieOf(start.headers) : linkCookie!
  const atProvider = await fetch(toProvider, { redirect: 'manual' })
  assert.is(atProvider.status, 302)
  const callback = new URL(atProvider.headers.get('location')!)
  const back = await w.t.client.get(`${callback.pathname}${callback.search}`, { headers: { cookie } })
  assert.is(back.status, 302)
  return { location: back.headers.get('location')!, callback: `${callback.pathname}${callback.search}`, cookie }
}

function fragment(location: string): URLSearchParams {
  return new URLSearchParams(location.slice(location.indexOf('#') + 1))
}

/** Signs in through the provider and exchanges the hand-off; the session token, or the error code. */
async function ssoSignIn(w: World, returnTo?: string): Promise<{ token?: string; error?: string; location: string }> {
  const query = returnTo ? `?returnTo=${encodeURIComponent(returnTo)}` : ''
  const { location } = await throughProvider(w, `/v1/sso/corp/start${query}`)
  const hash = fragment(location)
  if (hash.get('sso_error')) return { error: hash.get('sso_error')!, location }
  const session = await w.t.client.post('/v1/sso/session', { json: { handoff: hash.get('sso_handoff') } })
  assert.is(session.status, 200)
  return { token: session.body.session.token, location }
}

test('the connection is saved after discovery checks out; the client secret is never returned', async () => {
  const w = await world()
  try {
    const read = await w.t.client.get('/v1/org/sso', { token: w.org.owner.token })
    assert.is(read.status, 200)
    assert.is(read.body.item.redirectUri, 'http://contract.test/v1/sso/corp/callback')
    assert.is(read.body.item.hasClientSecret, true)
    assert.not.ok(JSON.stringify(read.body).includes(w.idp.clientSecret))
    const row = await w.t.app.deps.db.selectFrom('sso_connection').selectAll().executeTakeFirstOrThrow()
    assert.not.ok(row.client_secret_sealed.includes(w.idp.clientSecret), 'sealed at rest')
    const admin = await w.t.client.get('/v1/org/sso', { token: w.org.admin.token })
    assert.is(admin.status, 403)
    const broken = await w.t.client.put('/v1/org/sso', {
      token: w.org.owner.token,
      json: { ...read.body.item, clientSecret: 'x', issuer: `${w.idp.issuer}/nowhere` },
    })
    assert.is(broken.status, 422, 'unknown keys (the view) are refused')
    const wrongIssuer = await w.t.client.put('/v1/org/sso', {
      token: w.org.owner.token,
      json: {
        slug: 'corp',
        displayName: 'Corp',
        issuer: `${w.idp.issuer}/nowhere`,
        clientId: 'c',
        allowedDomains: ['corp.test'],
      },
    })
    assert.is(wrongIssuer.status, 502)
    assert.is(wrongIssuer.body.code, 'sso_provider_error')
  } finally {
    await w.close()
  }
})

test('resolve answers by domain alone: SSO with its start URL for the domain, password otherwise', async () => {
  const w = await world()
  try {
    const sso = await w.t.client.get('/v1/sso/resolve?email=someone.unknown%40corp.test')
    assert.equal(sso.body, {
      method: 'sso',
      provider: 'Corp IdP',
      startUrl: 'http://contract.test/v1/sso/corp/start',
      passwordAllowed: true,
      // The reference's field names, for its clients.
      requireSso: false,
      organizationSlug: 'corp',
      signInPath: '/v1/sso/corp/start',
      signInUrl: 'http://contract.test/v1/sso/corp/start',
    })
    const other = await w.t.client.get(`/v1/sso/resolve?email=${encodeURIComponent(w.org.owner.email)}`)
    assert.equal(other.body, { method: 'password', requireSso: false })
    assert.equal((await w.t.client.get('/v1/sso/resolve?email=nobody%40sso.test')).body, other.body)
  } finally {
    await w.close()
  }
})

test('a first sign-in from an allowed domain joins with the default role and team and gets a session', async () => {
  const w = await world()
  try {
    w.idp.nextUser = { sub: 'sub-ada', email: 'Ada@Corp.test', email_verified: true, name: 'Ada' }
    const signed = await ssoSignIn(w, '/console/#device=ABCD-EFGH')
    assert.ok(signed.token, signed.error)
    assert.is(fragment(signed.location).get('then'), 'device=ABCD-EFGH')
    assert.ok(signed.location.startsWith('/console/#sso_handoff='))
    const me = await w.t.client.get('/v1/me', { token: signed.token })
    assert.is(me.body.user.email, 'ada@corp.test')
    assert.is(me.body.member.role, 'member')
    assert.is(me.body.organization.id, w.org.orgId)
    const team = await w.t.client.get(`/v1/teams/${w.teamId}/members`, { token: w.org.owner.token })
    assert.ok(JSON.stringify(team.body).includes(me.body.member.id))
    // The same subject signs in again as the same account, without a second membership.
    const again = await ssoSignIn(w)
    const me2 = await w.t.client.get('/v1/me', { token: again.token })
    assert.is(me2.body.user.id, me.body.user.id)
    // Both callbacks are audited in this organization, origin sso, naming who signed in: the first
    // by what it did (member.joined, team.member_added), the second as the sign-in itself.
    const audit = await w.t.client.get('/v1/audit-events?origin=sso', { token: w.org.owner.token })
    assert.is(audit.status, 200, JSON.stringify(audit.body))
    const callbacks = audit.body.items.filter((e: { route: string | null }) => e.route?.includes('/callback'))
    const requests = new Set(callbacks.map((e: { requestId: string }) => e.requestId))
    assert.is(requests.size, 2, JSON.stringify(audit.body.items))
    assert.ok(callbacks.some((e: { action: string }) => e.action === 'member.joined'))
    for (const event of callbacks) {
      assert.is(event.outcome, 'success')
      assert.is(event.actor.userId, me.body.user.id)
      assert.is(event.actor.memberId, me.body.member.id)
    }
    // No password works for an account made by SSO.
    const password = await w.t.client.post('/v1/auth/sign-in', {
      json: { email: 'ada@corp.test', password: '!sso-only' },
    })
    assert.is(password.status, 401)
  } finally {
    await w.close()
  }
})

test('a wrong or replayed state is refused before the code reaches the provider; a hand-off works once', async () => {
  const w = await world()
  try {
    const wrong = await w.t.client.get('/v1/sso/corp/callback?state=forged&code=whatever')
    assert.is(wrong.status, 302)
    assert.is(fragment(wrong.headers.get('location')!).get('sso_error'), 'sso_state_invalid')
    assert.is(w.idp.tokenRequests, 0)
    const first = await throughProvider(w, '/v1/sso/corp/start')
    const handoff = fragment(first.location).get('sso_handoff')!
    const replay = await w.t.client.get(first.callback, { headers: { cookie: first.cookie } })
    assert.is(fragment(replay.headers.get('location')!).get('sso_error'), 'sso_state_invalid')
    assert.is(w.idp.tokenRequests, 1, 'the replayed code was never exchanged again')
    assert.is((await w.t.client.post('/v1/sso/session', { json: { handoff } })).status, 200)
    const twice = await w.t.client.post('/v1/sso/session', { json: { handoff } })
    assert.is(twice.status, 400)
    assert.is(twice.body.code, 'sso_handoff_invalid')
    // A callback carried to another browser (no cookie, or that browser's own) is refused there,
    // without spending the state: the browser that started still finishes.
    const start = await w.t.client.get('/v1/sso/corp/start')
    const cookie = cookieOf(start.headers)
    const atProvider = await fetch(start.headers.get('location')!, { redirect: 'manual' })
    const callback = new URL(atProvider.headers.get('location')!)
    const path = `${callback.pathname}${callback.search}`
    const otherBrowser = cookieOf((await w.t.client.get('/v1/sso/corp/start')).headers)
    for (const headers of [{}, { cookie: otherBrowser }] as Record<string, string>[]) {
      const elsewhere = await w.t.client.get(path, { headers })
      assert.is(fragment(elsewhere.headers.get('location')!).get('sso_error'), 'sso_state_invalid')
    }
    const tokenRequests = w.idp.tokenRequests
    const here = await w.t.client.get(path, { headers: { cookie } })
    assert.ok(fragment(here.headers.get('location')!).get('sso_handoff'), 'the starting browser still finishes')
    assert.is(w.idp.tokenRequests, tokenRequests + 1)
    // A state past its ten minutes is refused too.
    const again = await w.t.client.get('/v1/sso/corp/start')
    const againAtProvider = await fetch(again.headers.get('location')!, { redirect: 'manual' })
    const againCallback = new URL(againAtProvider.headers.get('location')!)
    w.t.clock.advance(11 * 60_000)
    const late = await w.t.client.get(`${againCallback.pathname}${againCallback.search}`, {
      headers: { cookie: cookieOf(again.headers) },
    })
    assert.is(fragment(late.headers.get('location')!).get('sso_error'), 'sso_state_invalid')
  } finally {
    await w.close()
  }
})

test('an expired ID token, one for another audience and a forged signature are refused', async () => {
  const w = await world()
  try {
    const now = Math.floor(Date.now() / 1000)
    for (const tamper of [{ exp: now - 3600 }, { aud: 'someone-else' }, { iss: 'http://127.0.0.1:1' }]) {
      w.idp.tamper = tamper
      const refused = await ssoSignIn(w)
      assert.is(refused.error, 'sso_id_token_invalid', JSON.stringify(tamper))
    }
    const members = await w.t.app.deps.db.selectFrom('app_user').select('email').execute()
    assert.not.ok(
      members.some((m) => m.email === 'ada@corp.test'),
      'no account was made',
    )
  } finally {
    await w.close()
  }
})

test('key rotation: a token signed with a new key refetches the JWKS once, then verifies', async () => {
  const w = await world()
  try {
    assert.ok((await ssoSignIn(w)).token)
    assert.is(w.idp.jwksFetches, 1)
    assert.ok((await ssoSignIn(w)).token)
    assert.is(w.idp.jwksFetches, 1, 'cached')
    await w.idp.rotate('ES256')
    w.idp.nextUser = { sub: 'sub-bea', email: 'bea@corp.test', email_verified: true }
    const after = await ssoSignIn(w)
    assert.ok(after.token, after.error)
    assert.is(w.idp.jwksFetches, 2)
  } finally {
    await w.close()
  }
})

test('an email outside the allowed domains, or unverified, gets no account', async () => {
  const w = await world()
  try {
    w.idp.nextUser = { sub: 'sub-eve', email: 'eve@elsewhere.test', email_verified: true }
    assert.is((await ssoSignIn(w)).error, 'sso_domain_not_allowed')
    w.idp.nextUser = { sub: 'sub-eve2', email: 'eve@corp.test', email_verified: false }
    assert.is((await ssoSignIn(w)).error, 'sso_domain_not_allowed')
    const users = await w.t.app.deps.db.selectFrom('app_user').select('email').execute()
    assert.not.ok(users.some((u) => u.email.startsWith('eve@')))
  } finally {
    await w.close()
  }
})

test('accounts are linked by subject, never by email: an existing email is refused until its owner links it', async () => {
  const w = await world()
  try {
    // The member's email domain is allowed too, so only the linking rule stands in the way.
    w.idp.nextUser = { sub: 'sub-member', email: w.org.member.email, email_verified: true }
    await w.t.client.put('/v1/org/sso', {
      token: w.org.owner.token,
      json: {
        slug: 'corp',
        displayName: 'Corp IdP',
        issuer: w.idp.issuer,
        clientId: w.idp.clientId,
        allowedDomains: ['corp.test', 'sso.test'],
      },
    })
    assert.is((await ssoSignIn(w)).error, 'sso_account_exists')
    const link = await w.t.client.post('/v1/org/sso/link', { token: w.org.member.token, json: {} })
    assert.is(link.status, 200)
    const linked = await throughProvider(w, link.body.url, cookieOf(link.headers))
    const session = await w.t.client.post('/v1/sso/session', {
      json: { handoff: fragment(linked.location).get('sso_handoff') },
    })
    assert.is(session.body.user.id, w.org.member.userId)
    assert.ok((await ssoSignIn(w)).token, 'the linked subject signs in')
    // Another subject with the same email is still refused; and the first subject cannot move.
    w.idp.nextUser = { sub: 'sub-impostor', email: w.org.member.email, email_verified: true }
    assert.is((await ssoSignIn(w)).error, 'sso_account_exists')
    w.idp.nextUser = { sub: 'sub-member', email: w.org.member.email, email_verified: true }
    const steal = await w.t.client.post('/v1/org/sso/link', { token: w.org.admin.token, json: {} })
    const stolen = await throughProvider(w, steal.body.url, cookieOf(steal.headers))
    assert.is(fragment(stolen.location).get('sso_error'), 'sso_identity_conflict')
  } finally {
    await w.close()
  }
})

test('an account the organization provisioned (no password, already a member) is linked on its first SSO sign-in', async () => {
  const w = await world()
  try {
    // What SCIM provisioning leaves: an account without a password, a member of this organization.
    const now = new Date(w.t.clock.now()).toISOString()
    const db = w.t.app.deps.db
    const userId = newId('usr')
    await db
      .insertInto('app_user')
      .values({
        id: userId,
        email: 'pat@corp.test',
        name: 'Pat',
        password_hash: NO_PASSWORD,
        created_at: now,
        updated_at: now,
      })
      .execute()
    await db
      .insertInto('member')
      .values({
        id: newId('mem'),
        org_id: w.org.orgId,
        user_id: userId,
        role: 'member',
        created_at: now,
        updated_at: now,
      })
      .execute()
    w.idp.nextUser = { sub: 'sub-pat', email: 'pat@corp.test', email_verified: true }
    const signed = await ssoSignIn(w)
    assert.ok(signed.token, signed.error)
    assert.is((await w.t.client.get('/v1/me', { token: signed.token })).body.user.id, userId)
    // Once linked, another subject with that email is refused like any other.
    w.idp.nextUser = { sub: 'sub-not-pat', email: 'pat@corp.test', email_verified: true }
    assert.is((await ssoSignIn(w)).error, 'sso_account_exists')
  } finally {
    await w.close()
  }
})

test('SCIM provisioning asks the admission policy, and a provisioned person then signs in with SSO', async () => {
  const w = await world()
  try {
    const scim = scimClient(w.t, await ownerScimToken(w.t, w.org))
    const put = (scimOpen: boolean, expectedVersion: number) =>
      w.t.client.put('/v1/org/admission-policy', {
        token: w.org.owner.token,
        json: {
          expectedVersion,
          waysIn: { invitation: true, ssoJustInTime: true, scim: scimOpen },
          allowedDomains: ['corp.test'],
          requireSso: false,
        },
      })
    assert.is((await put(false, 0)).status, 200)
    const user = { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'sam@corp.test', active: true }
    const closed = await scim.post('/Users', user)
    assert.is(closed.status, 403)
    assert.is(closed.body.code, 'admission_refused')
    assert.is((await put(true, 1)).status, 200)
    const outside = await scim.post('/Users', { ...user, userName: 'sam@elsewhere.test' })
    assert.is(outside.status, 403)
    assert.is(outside.body.code, 'admission_refused')
    assert.match(outside.body.detail, /domain/)
    const created = await scim.post('/Users', user)
    assert.is(created.status, 201, JSON.stringify(created.body))
    w.idp.nextUser = { sub: 'sub-sam', email: 'sam@corp.test', email_verified: true }
    const signed = await ssoSignIn(w)
    assert.ok(signed.token, signed.error)
    assert.is((await w.t.client.get('/v1/me', { token: signed.token })).body.user.email, 'sam@corp.test')
  } finally {
    await w.close()
  }
})

test('the admission policy: owner only, version-checked, validated, and consulted by SSO and invitations', async () => {
  const w = await world()
  try {
    const read = await w.t.client.get('/v1/org/admission-policy', { token: w.org.owner.token })
    assert.equal(read.body.item, {
      version: 0,
      waysIn: { invitation: true, ssoJustInTime: true, scim: true },
      allowedDomains: [],
      requireSso: false,
      updatedAt: null,
    })
    assert.is((await w.t.client.get('/v1/org/admission-policy', { token: w.org.admin.token })).status, 403)
    const body = {
      expectedVersion: 0,
      waysIn: { invitation: false, ssoJustInTime: false, scim: true },
      allowedDomains: ['Corp.test'],
      requireSso: false,
    }
    const invite = await w.t.client.post('/v1/invitations', {
      token: w.org.owner.token,
      json: { email: 'late@corp.test', role: 'member' },
    })
    assert.is(invite.status, 201)
    const put = await w.t.client.put('/v1/org/admission-policy', { token: w.org.owner.token, json: body })
    assert.is(put.status, 200)
    assert.is(put.body.item.version, 1)
    assert.equal(put.body.item.allowedDomains, ['corp.test'])
    const stale = await w.t.client.put('/v1/org/admission-policy', { token: w.org.owner.token, json: body })
    assert.is(stale.status, 409)
    assert.is(stale.body.code, 'admission_policy_conflict')
    assert.is(stale.body.details.currentVersion, 1)
    const many = Array.from({ length: 101 }, (_, i) => `d${i}.test`)
    const tooMany = await w.t.client.put('/v1/org/admission-policy', {
      token: w.org.owner.token,
      json: { ...body, expectedVersion: 1, allowedDomains: many },
    })
    assert.is(tooMany.status, 422)
    const bad = await w.t.client.put('/v1/org/admission-policy', {
      token: w.org.owner.token,
      json: { ...body, expectedVersion: 1, allowedDomains: ['not a domain'] },
    })
    assert.is(bad.status, 422)
    // SSO just-in-time is closed: a new person is refused, with the reason.
    assert.is((await ssoSignIn(w)).error, 'admission_refused')
    // Invitations are closed: new ones are refused, and a pending one cannot be accepted.
    const refusedInvite = await w.t.client.post('/v1/invitations', {
      token: w.org.owner.token,
      json: { email: 'other@corp.test', role: 'member' },
    })
    assert.is(refusedInvite.status, 403)
    assert.equal(refusedInvite.body.details, { reason: 'way_disabled', way: 'invitation' })
    const accept = await w.t.client.post('/v1/auth/sign-up', {
      json: { email: 'late@corp.test', password: 'a long password', name: 'Late', invitationToken: invite.body.token },
    })
    assert.is(accept.status, 403)
  } finally {
    await w.close()
  }
})

test('requiring SSO: refused without an SSO session, then ends password sessions and API keys and refuses passwords', async () => {
  const w = await world()
  try {
    const { owner, admin, member } = w.org
    // The admin is also in another organization, where passwords still work.
    assert.is((await w.t.client.post('/v1/orgs', { token: admin.token, json: { name: 'Side' } })).status, 201)
    const on = (token: string, expectedVersion: number) =>
      w.t.client.put('/v1/org/admission-policy', {
        token,
        json: {
          expectedVersion,
          waysIn: { invitation: true, ssoJustInTime: true, scim: true },
          allowedDomains: [],
          requireSso: true,
        },
      })
    const unproven = await on(owner.token, 0)
    assert.is(unproven.status, 409)
    assert.is(unproven.body.code, 'sso_not_proven')
    // The owner links their account and comes back with a session the provider signed in.
    w.idp.nextUser = { sub: 'sub-owner', email: owner.email, email_verified: true }
    const link = await w.t.client.post('/v1/org/sso/link', { token: owner.token, json: {} })
    const back = await throughProvider(w, link.body.url, cookieOf(link.headers))
    const ssoSession = await w.t.client.post('/v1/sso/session', {
      json: { handoff: fragment(back.location).get('sso_handoff') },
    })
    const ownerSso: string = ssoSession.body.session.token
    const switched = await on(ownerSso, 0)
    assert.is(switched.status, 200, JSON.stringify(switched.body))
    assert.is(switched.body.item.requireSso, true)
    // Password sessions ended; API keys disabled; the SSO session carries on.
    assert.is((await w.t.client.get('/v1/me', { token: owner.token })).status, 401)
    assert.is((await w.t.client.get('/v1/me', { token: member.token })).status, 401)
    assert.is((await w.t.client.get('/v1/org', { apiKey: w.org.adminKey.key })).status, 401)
    assert.is((await w.t.client.get('/v1/org', { apiKey: w.org.ownerKey.key })).status, 401)
    assert.is((await w.t.client.get('/v1/org', { token: ownerSso })).status, 200)
    // Password sign-in: refused outright when every organization of the account requires SSO...
    const refused = await w.t.client.post('/v1/auth/sign-in', {
      json: { email: member.email, password: member.password },
    })
    assert.is(refused.status, 403)
    assert.is(refused.body.code, 'sso_required')
    // ...and, for someone also elsewhere, refused in this organization only.
    const adminAgain = await w.t.client.post('/v1/auth/sign-in', {
      json: { email: admin.email, password: admin.password },
    })
    assert.is(adminAgain.status, 200)
    const here = await w.t.client.get('/v1/org', { token: adminAgain.body.session.token, orgId: w.org.orgId })
    assert.is(here.status, 403)
    assert.is(here.body.code, 'sso_required')
    assert.is(here.body.details.rule, 'requireSso')
    // Nor can that password session approve a program (device sign-in) into this organization.
    const device = await w.t.client.post('/oauth/device_authorization', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'opencode' }).toString(),
    })
    const approve = await w.t.client.post('/v1/oauth/device/approve', {
      token: adminAgain.body.session.token,
      json: { userCode: device.body.user_code, orgId: w.org.orgId },
    })
    assert.is(approve.status, 403)
    assert.is(approve.body.code, 'sso_required')
    // The owner cannot lock everyone out by removing the connection while the rule is on.
    const removal = await w.t.client.delete('/v1/org/sso', { token: ownerSso })
    assert.is(removal.status, 409)
    assert.is(removal.body.code, 'sso_connection_in_use')
    const resolved = await w.t.client.get(`/v1/sso/resolve?email=x%40corp.test`)
    assert.is(resolved.body.passwordAllowed, false)
    assert.is(resolved.body.requireSso, true)
  } finally {
    await w.close()
  }
})

test('a provider that refuses, an unknown sign-in URL, a missing connection and a taken domain or slug each answer with their code', async () => {
  const w = await world()
  try {
    // The provider sends the person back with an error instead of a code.
    const start = await w.t.client.get('/v1/sso/corp/start')
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!
    const denied = await w.t.client.get(
      `/v1/sso/corp/callback?state=${encodeURIComponent(state)}&error=access_denied`,
      {
        headers: { cookie: cookieOf(start.headers) },
      },
    )
    assert.is(denied.status, 302)
    assert.is(fragment(denied.headers.get('location')!).get('sso_error'), 'sso_provider_denied')
    assert.is(w.idp.tokenRequests, 0)

    const unknown = await w.t.client.get('/v1/sso/nobody/start')
    assert.is(unknown.status, 404)
    assert.is(unknown.body.code, 'sso_connection_not_found')

    const other = await buildFixtureOrg(w.t.client, 'other')
    const none = await w.t.client.get('/v1/org/sso', { token: other.owner.token })
    assert.is(none.status, 404)
    assert.is(none.body.code, 'sso_not_configured')
    const connection = (slug: string, domain: string) => ({
      slug,
      displayName: 'Other IdP',
      issuer: w.idp.issuer,
      clientId: w.idp.clientId,
      clientSecret: w.idp.clientSecret,
      allowedDomains: [domain],
      defaultRole: 'member',
    })
    const domainTaken = await w.t.client.put('/v1/org/sso', {
      token: other.owner.token,
      json: connection('other', 'corp.test'),
    })
    assert.is(domainTaken.status, 409)
    assert.is(domainTaken.body.code, 'sso_domain_taken')
    const slugTaken = await w.t.client.put('/v1/org/sso', {
      token: other.owner.token,
      json: connection('corp', 'other.test'),
    })
    assert.is(slugTaken.status, 409)
    assert.is(slugTaken.body.code, 'sso_slug_taken')
    // Neither refusal saved anything for the other organization.
    assert.is((await w.t.client.get('/v1/org/sso', { token: other.owner.token })).status, 404)
  } finally {
    await w.close()
  }
})

test.run()
