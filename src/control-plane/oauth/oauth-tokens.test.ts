import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { findActiveOAuthToken } from './oauth-tokens.ts'
import { deviceTokens, postForm } from './oauth-test-kit.ts'

const test = suite('control-plane/oauth/tokens')

function refresh(
  t: Awaited<ReturnType<typeof startTestControlPlane>>,
  refreshToken: string,
  extra: Record<string, string> = {},
) {
  return postForm(t.client, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: 'opencode',
    ...extra,
  })
}

test('a refresh rotates both tokens and ends the old access token; reusing an exchanged refresh token revokes the whole grant', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'rot')
    const first = await deviceTokens(t.client, org.member.token)
    const second = await refresh(t, first.refresh_token)
    assert.is(second.status, 200)
    assert.is.not(second.body.access_token, first.access_token)
    assert.is.not(second.body.refresh_token, first.refresh_token)
    assert.equal(second.body.organization, first.organization)
    assert.is((await t.client.get('/v1/me', { token: first.access_token })).status, 401, 'superseded')
    assert.is((await t.client.get('/v1/me', { token: second.body.access_token })).status, 200)
    const rows = await t.app.deps.db.selectFrom('oauth_token').select(['kind', 'ended_at']).execute()
    assert.equal(
      rows.map((r) => `${r.kind}:${r.ended_at ? 'ended' : 'live'}`).sort(),
      ['access:live', 'refresh:ended', 'refresh:live'],
      'one live pair; the exchanged refresh token is kept to recognise reuse',
    )
    const wrongClient = await postForm(t.client, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: second.body.refresh_token,
      client_id: 'service-cli',
    })
    assert.is(wrongClient.body.error, 'invalid_grant', 'a refresh token is bound to its client')
    const wider = await refresh(t, second.body.refresh_token, { scope: 'catalog:read' })
    assert.is(wider.body.error, 'invalid_scope')

    const reused = await refresh(t, first.refresh_token)
    assert.is(reused.status, 400)
    assert.is(reused.body.error, 'invalid_grant')
    assert.is((await t.client.get('/v1/me', { token: second.body.access_token })).status, 401, 'the family is revoked')
    assert.is((await refresh(t, second.body.refresh_token)).body.error, 'invalid_grant')
    const mine = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(mine.body.items[0].status, 'revoked')
    assert.is(mine.body.items[0].revokedReason, 'refresh_reuse')
    const bearerRefresh = await t.client.get('/v1/me', { token: second.body.refresh_token })
    assert.is(bearerRefresh.status, 401)
    assert.match(bearerRefresh.body.message, /refresh token/)
  } finally {
    await t.close()
  }
})

test('two refreshes of one token at once: one wins, the other counts as reuse and ends the grant', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'race')
    const first = await deviceTokens(t.client, org.member.token)
    const answers = await Promise.all([refresh(t, first.refresh_token), refresh(t, first.refresh_token)])
    assert.ok(
      answers.some((a) => a.status === 400 && a.body.error === 'invalid_grant'),
      'at most one exchange succeeds',
    )
    const list = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(list.body.items[0].revokedReason, 'refresh_reuse')
  } finally {
    await t.close()
  }
})

test('access tokens expire with their lifetime (oauth.tokenTtlDays) and the list shows when', async () => {
  const t = await startTestControlPlane({ file: { oauth: { tokenTtlDays: 2 } } })
  try {
    const org = await buildFixtureOrg(t.client, 'ttl')
    const tokens = await deviceTokens(t.client, org.member.token)
    assert.is(tokens.expires_in, 2 * 24 * 3600)
    const list = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(list.body.items[0].expiresAt, new Date(t.clock.now() + 2 * 24 * 3600_000).toISOString())
    t.clock.advance(2 * 24 * 3600_000 + 1)
    const expired = await t.client.get('/v1/me', { token: tokens.access_token })
    assert.is(expired.status, 401)
    assert.match(expired.body.message, /expired/)
    assert.is((await refresh(t, tokens.refresh_token)).body.error, 'invalid_grant')
    const after = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(after.body.items[0].status, 'expired')
  } finally {
    await t.close()
  }
})

test('a member lists and revokes only their own tokens; admins list and revoke the organization’s; the audit records issue and revocation', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'list')
    const other = await buildFixtureOrg(t.client, 'elsewhere')
    const mine = await deviceTokens(t.client, org.member.token)
    const admins = await deviceTokens(t.client, org.admin.token, { clientId: 'service-cli' })
    const foreign = await deviceTokens(t.client, other.member.token)

    const list = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(list.body.items.length, 1)
    const item = list.body.items[0]
    assert.is(item.clientId, 'opencode')
    assert.is(item.clientName, 'OpenCode')
    assert.is(item.memberId, org.member.memberId)
    assert.equal(item.scopes, ['delivery:read'])
    assert.is(item.status, 'active')
    assert.not.ok(JSON.stringify(list.body).includes(mine.access_token))

    const all = await t.client.get('/v1/oauth-tokens', { token: org.admin.token })
    assert.is(all.body.items.length, 2, 'the organization’s tokens, not another’s')
    assert.is((await t.client.get('/v1/oauth-tokens', { token: org.member.token })).status, 403)

    const adminTokenId = all.body.items.find((i: { clientId: string }) => i.clientId === 'service-cli').id
    const notMine = await t.client.delete(`/v1/me/oauth-tokens/${adminTokenId}`, { token: org.member.token })
    assert.is(notMine.status, 404)
    const foreignId = (await t.client.get('/v1/me/oauth-tokens', { token: other.member.token })).body.items[0].id
    assert.is((await t.client.delete(`/v1/oauth-tokens/${foreignId}`, { token: org.owner.token })).status, 404)
    assert.is((await t.client.get('/v1/me', { token: foreign.access_token })).status, 200)

    assert.is((await t.client.delete(`/v1/me/oauth-tokens/${item.id}`, { token: org.member.token })).status, 204)
    assert.is((await t.client.get('/v1/me', { token: mine.access_token })).status, 401)
    assert.is((await t.client.delete(`/v1/oauth-tokens/${adminTokenId}`, { apiKey: org.ownerKey.key })).status, 204)
    assert.is((await t.client.get('/v1/me', { token: admins.access_token })).status, 401)
    assert.is((await refresh(t, mine.refresh_token)).body.error, 'invalid_grant')

    const audit = await t.client.get('/v1/audit-events?limit=100', { token: org.owner.token })
    const actions = audit.body.items.map((e: { action: string; data: { reason?: string } | null }) =>
      e.action === 'oauth_token.revoked' ? `${e.action}:${e.data?.reason}` : e.action,
    )
    assert.is(actions.filter((a: string) => a === 'oauth_token.issued').length, 2)
    assert.ok(actions.includes('oauth_device.approved'))
    assert.ok(actions.includes('oauth_token.revoked:member'))
    assert.ok(actions.includes('oauth_token.revoked:admin'))
  } finally {
    await t.close()
  }
})

test('removing a member revokes their OAuth tokens in the same step; the grant is no longer active', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'gone')
    const tokens = await deviceTokens(t.client, org.member.token)
    const me = await t.client.get('/v1/me', { token: tokens.access_token })
    const grantId: string = me.body.credential.tokenId
    assert.ok(await findActiveOAuthToken(t.app.deps, grantId))
    assert.equal((await findActiveOAuthToken(t.app.deps, grantId))!.scopes, ['delivery:read'])
    assert.is((await t.client.delete(`/v1/members/${org.member.memberId}`, { token: org.admin.token })).status, 204)
    assert.is((await t.client.get('/v1/me', { token: tokens.access_token })).status, 401)
    assert.is((await refresh(t, tokens.refresh_token)).body.error, 'invalid_grant')
    assert.is(await findActiveOAuthToken(t.app.deps, grantId), null)
    const left = await t.app.deps.db.selectFrom('oauth_token').select('id').where('grant_id', '=', grantId).execute()
    assert.is(left.length, 0, 'a revoked grant keeps no token rows')
    const all = await t.client.get('/v1/oauth-tokens', { token: org.admin.token })
    assert.is(all.body.items[0].revokedReason, 'member_removed')
  } finally {
    await t.close()
  }
})

test('a delivery:read token reads /v1/me and /v1/me/orgs and is refused everywhere else with 403 insufficient_scope', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'scope')
    const tokens = await deviceTokens(t.client, org.owner.token)
    const token = tokens.access_token
    const orgs = await t.client.get('/v1/me/orgs', { token })
    assert.is(orgs.status, 200)
    assert.equal(
      orgs.body.items.map((o: { id: string }) => o.id),
      [org.orgId],
    )
    for (const path of [
      '/v1/org',
      '/v1/members',
      '/v1/config-objects',
      '/v1/skill-hubs',
      '/v1/api-keys',
      '/v1/oauth-tokens',
    ]) {
      const res = await t.client.get(path, { token })
      assert.is(res.status, 403, path)
      assert.is(res.body.code, 'insufficient_scope', path)
    }
    const write = await t.client.post('/v1/teams', { token, json: { name: 'nope' } })
    assert.is(write.body.code, 'insufficient_scope')
    const sessionOnly = await t.client.post('/v1/oauth/device/deny', { token, json: { userCode: 'BBBB-BBBB' } })
    assert.is(sessionOnly.status, 403)
    assert.is(sessionOnly.body.code, 'session_required')
    const events = await t.client.get('/v1/events', { token, headers: { accept: 'application/json' } })
    assert.ok(events.status === 200, 'the change feed is part of what a delivery:read token follows')
    const bogus = await t.client.get('/v1/me', { token: 'oat_not-a-token' })
    assert.is(bogus.status, 401)
  } finally {
    await t.close()
  }
})

test('RFC 7009 revocation: the client’s own token ends its grant; unknown tokens and other clients’ tokens answer 200 and change nothing', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'rfc7009')
    const a = await deviceTokens(t.client, org.member.token)
    const unknown = await postForm(t.client, '/oauth/revoke', { token: 'oat_unknown', client_id: 'opencode' })
    assert.is(unknown.status, 200)
    const otherClient = await postForm(t.client, '/oauth/revoke', { token: a.access_token, client_id: 'service-cli' })
    assert.is(otherClient.status, 200)
    assert.is((await t.client.get('/v1/me', { token: a.access_token })).status, 200)
    const badClient = await postForm(t.client, '/oauth/revoke', { token: a.access_token, client_id: 'nobody' })
    assert.is(badClient.status, 401)
    assert.is(badClient.body.error, 'invalid_client')
    const missing = await postForm(t.client, '/oauth/revoke', { client_id: 'opencode' })
    assert.is(missing.body.error, 'invalid_request')
    const revoked = await postForm(t.client, '/oauth/revoke', {
      token: a.refresh_token,
      client_id: 'opencode',
      token_type_hint: 'refresh_token',
    })
    assert.is(revoked.status, 200)
    assert.is(
      (await t.client.get('/v1/me', { token: a.access_token })).status,
      401,
      'revoking the refresh token ends the access token',
    )
    const list = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    assert.is(list.body.items[0].revokedReason, 'client')
  } finally {
    await t.close()
  }
})

test.run()
