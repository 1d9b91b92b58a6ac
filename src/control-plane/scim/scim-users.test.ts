import { assert, suite } from '../../../tests/harness.ts'
import { deviceTokens } from '../oauth/oauth-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { ownerScimToken, patchOp, scimCall, scimClient, USER_SCHEMA } from './scim-test-kit.ts'

const test = suite('control-plane/scim-users', { timeoutMs: 60_000 })

async function memberEmails(t: TestControlPlane, ownerToken: string): Promise<string[]> {
  const list = await t.client.get('/v1/members?limit=100', { token: ownerToken })
  return list.body.items.map((m: { email: string }) => m.email)
}

test("Okta's sequence: find by userName, create, read, then PUT with active false deprovisions", async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'okta')
    const scim = scimClient(t, await ownerScimToken(t, org, 'Okta'))
    // Okta's first request for every assigned person.
    const filter = encodeURIComponent('userName eq "jane.doe@okta.test"')
    const lookup = await scim.get(`/Users?filter=${filter}&startIndex=1&count=100`)
    assert.is(lookup.status, 200)
    assert.equal(lookup.body.schemas, ['urn:ietf:params:scim:api:messages:2.0:ListResponse'])
    assert.is(lookup.body.totalResults, 0)
    assert.equal(lookup.body.Resources, [])
    const body = {
      schemas: [USER_SCHEMA],
      userName: 'Jane.Doe@okta.test',
      name: { givenName: 'Jane', familyName: 'Doe' },
      emails: [{ primary: true, value: 'jane.doe@okta.test', type: 'work' }],
      displayName: 'Jane Doe',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: 'never stored',
      active: true,
    }
    const created = await scim.post('/Users', body)
    assert.is(created.status, 201)
    assert.is(created.body.userName, 'jane.doe@okta.test')
    assert.is(created.body.active, true)
    assert.is(created.body.meta.resourceType, 'User')
    assert.is(created.headers.get('location'), created.body.meta.location)
    assert.is(created.headers.get('etag'), created.body.meta.version)
    assert.not.ok(JSON.stringify(created.body).includes('never stored'))
    assert.ok((await memberEmails(t, org.owner.token)).includes('jane.doe@okta.test'), 'the person is a member')
    const id = created.body.id

    const found = await scim.get(`/Users?filter=${filter}&startIndex=1&count=100`)
    assert.is(found.body.totalResults, 1)
    assert.is(found.body.Resources[0].id, id)
    const read = await scim.get(`/Users/${id}`)
    assert.is(read.status, 200)
    assert.is(read.body.name.givenName, 'Jane')
    assert.is(read.body.externalId, '00ujl29u0le5T6Aj10h7')

    const renamed = await scim.put(`/Users/${id}`, { ...body, name: { givenName: 'Janet', familyName: 'Doe' } })
    assert.is(renamed.status, 200)
    assert.is(renamed.body.name.givenName, 'Janet')
    assert.is.not(renamed.body.meta.version, read.body.meta.version, 'the version follows the change')

    const deactivated = await scim.put(`/Users/${id}`, { ...body, active: false })
    assert.is(deactivated.status, 200)
    assert.is(deactivated.body.active, false)
    assert.not.ok((await memberEmails(t, org.owner.token)).includes('jane.doe@okta.test'), 'the membership is gone')
    assert.is((await scim.get(`/Users/${id}`)).body.active, false, 'the resource stays, inactive')
    const again = await scim.put(`/Users/${id}`, { ...body, active: true })
    assert.is(again.body.active, true)
    assert.ok((await memberEmails(t, org.owner.token)).includes('jane.doe@okta.test'), 'reactivation restores it')
  } finally {
    await t.close()
  }
})

test('Microsoft Entra\'s sequence: PATCH in path and value forms, with active as the string "False"', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'entra')
    const scim = scimClient(t, await ownerScimToken(t, org, 'Entra'))
    const probe = await scim.get(`/Users?filter=${encodeURIComponent('userName eq "ryan@entra.test"')}`)
    assert.is(probe.body.totalResults, 0)
    const created = await scim.post('/Users', {
      schemas: [USER_SCHEMA, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId: 'ryan',
      userName: 'ryan@entra.test',
      active: true,
      displayName: 'Ryan Leenay',
      emails: [{ primary: true, type: 'work', value: 'ryan@entra.test' }],
      name: { familyName: 'Leenay', givenName: 'Ryan' },
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Sales' },
    })
    assert.is(created.status, 201)
    const id = created.body.id
    const byExternal = await scim.get(`/Users?filter=${encodeURIComponent('externalId eq "ryan"')}`)
    assert.is(byExternal.body.Resources[0].id, id)

    const patched = await scim.patch(
      `/Users/${id}`,
      patchOp(
        { op: 'Replace', path: 'displayName', value: 'Ryan L.' },
        { op: 'Add', path: 'emails[type eq "work"].value', value: 'ryan.l@entra.test' },
        { op: 'Replace', path: 'name.familyName', value: 'Leenay-Smith' },
        { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Ops' },
        { op: 'Add', path: 'addresses[type eq "work"].formatted', value: '1 Main St' },
        { op: 'Replace', path: 'phoneNumbers[type eq "mobile"].value', value: '+1 555 0100' },
        { op: 'Replace', value: { 'name.givenName': 'Ry', externalId: 'ryan-2' } },
      ),
    )
    assert.is(patched.status, 200)
    assert.is(patched.body.displayName, 'Ryan L.')
    assert.is(patched.body.name.familyName, 'Leenay-Smith')
    assert.is(patched.body.name.givenName, 'Ry')
    assert.is(patched.body.externalId, 'ryan-2')
    assert.equal(patched.body.emails, [{ value: 'ryan.l@entra.test', type: 'work', primary: true }])
    const byName = await scim.get(`/Users?filter=${encodeURIComponent('displayName eq "Ryan L."')}`)
    assert.is(byName.body.totalResults, 1)

    const off = await scim.patch(`/Users/${id}`, patchOp({ op: 'Replace', path: 'active', value: 'False' }))
    assert.is(off.status, 200)
    assert.is(off.body.active, false)
    assert.not.ok((await memberEmails(t, org.owner.token)).includes('ryan@entra.test'))
    const on = await scim.patch(`/Users/${id}`, patchOp({ op: 'replace', value: { active: 'True' } }))
    assert.is(on.body.active, true)
    assert.ok((await memberEmails(t, org.owner.token)).includes('ryan@entra.test'))
    const valueForm = await scim.patch(`/Users/${id}`, patchOp({ op: 'replace', value: { active: false } }))
    assert.is(valueForm.body.active, false)

    const deleted = await scim.delete(`/Users/${id}`)
    assert.is(deleted.status, 204)
    assert.is((await scim.get(`/Users/${id}`)).status, 404)
  } finally {
    await t.close()
  }
})

test('deactivation ends the person’s session, API key and device token within the request', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'revoke')
    const scim = scimClient(t, await ownerScimToken(t, org))
    const device = await deviceTokens(t.client, org.admin.token, { orgId: org.orgId })
    assert.is((await t.client.get('/v1/me', { token: device.access_token })).status, 200)
    // The admin's account already exists: provisioning links it and keeps the membership.
    const linked = await scim.post('/Users', { schemas: [USER_SCHEMA], userName: org.admin.email, active: true })
    assert.is(linked.status, 201)
    const me = await t.client.get('/v1/me', { token: org.admin.token })
    assert.is(me.body.member.role, 'admin', 'linking keeps the existing role')

    const off = await scim.patch(`/Users/${linked.body.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
    assert.is(off.status, 200)
    assert.is((await t.client.get('/v1/me', { token: org.admin.token })).status, 401, 'the session ended')
    assert.is((await t.client.get('/v1/org', { apiKey: org.adminKey.key })).status, 401, 'the API key is disabled')
    assert.is((await t.client.get('/v1/me', { token: device.access_token })).status, 401, 'the device token is revoked')
    const audit = await t.client.get('/v1/audit-events?limit=100', { token: org.owner.token })
    const actions = audit.body.items.map((e: { action: string }) => e.action)
    for (const action of [
      'member.removed',
      'api_key.disabled',
      'oauth_token.revoked',
      'session.revoked',
      'scim_user.deactivated',
    ])
      assert.ok(actions.includes(action), action)
    const scimEvent = audit.body.items.find((e: { action: string }) => e.action === 'scim_user.deactivated')
    assert.is(scimEvent.actor.credential, 'scim')
    // Other people are untouched.
    assert.is((await t.client.get('/v1/me', { token: org.member.token })).status, 200)
  } finally {
    await t.close()
  }
})

test('DELETE deprovisions too; a person in another organization keeps their session there', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'dela')
    const other = await buildFixtureOrg(t.client, 'delb')
    const scim = scimClient(t, await ownerScimToken(t, org))
    const member = await scim.post('/Users', { userName: org.member.email })
    assert.is((await scim.delete(`/Users/${member.body.id}`)).status, 204)
    assert.is(
      (await t.client.get('/v1/me', { token: org.member.token })).status,
      401,
      'their only organization: signed out',
    )

    // The admin of B also joins A; A's provider deprovisioning them must not sign them out of B.
    const invite = await t.client.post('/v1/invitations', {
      token: org.owner.token,
      json: { email: other.admin.email },
    })
    const accepted = await t.client.post(`/v1/invitations/accept`, {
      token: other.admin.token,
      json: { token: invite.body.token },
    })
    assert.is(accepted.status, 200, JSON.stringify(accepted.body))
    const both = await scim.post('/Users', { userName: other.admin.email })
    assert.is((await t.client.get('/v1/org', { token: other.admin.token, orgId: org.orgId })).status, 200)
    await scim.patch(`/Users/${both.body.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
    assert.is((await t.client.get('/v1/org', { token: other.admin.token, orgId: org.orgId })).status, 404, 'not in A')
    const inB = await t.client.get('/v1/org', { token: other.admin.token, orgId: other.orgId })
    assert.is(inB.status, 200, 'still signed in, in B')
    assert.is((await t.client.get('/v1/org', { apiKey: other.adminKey.key })).status, 200, "B's API key works")
  } finally {
    await t.close()
  }
})

test('the owner cannot be deprovisioned, and a SCIM User keeps its userName', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'own')
    const scim = scimClient(t, await ownerScimToken(t, org))
    const owner = await scim.post('/Users', { userName: org.owner.email })
    const refused = await scim.patch(
      `/Users/${owner.body.id}`,
      patchOp({ op: 'replace', path: 'active', value: false }),
    )
    assert.is(refused.status, 400)
    assert.is(refused.body.scimType, 'mutability')
    assert.is((await scim.get(`/Users/${owner.body.id}`)).body.active, true, 'nothing changed')
    assert.is((await t.client.get('/v1/me', { token: org.owner.token })).status, 200)
    const rename = await scim.patch(
      `/Users/${owner.body.id}`,
      patchOp({ op: 'replace', path: 'userName', value: 'x@own.test' }),
    )
    assert.is(rename.body.scimType, 'mutability')
  } finally {
    await t.close()
  }
})

test('RFC 7644 requests: create (§3.3), uniqueness (409), paging (§3.4.2.4), If-Match (§3.14), errors (§3.12)', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'rfc')
    const token = await ownerScimToken(t, org)
    const scim = scimClient(t, token)
    // §3.3's example, with an email as userName (this service's accounts are found by email).
    const bjensen = {
      schemas: [USER_SCHEMA],
      userName: 'bjensen@example.com',
      externalId: 'bjensen',
      name: { formatted: 'Ms. Barbara J Jensen III', familyName: 'Jensen', givenName: 'Barbara' },
    }
    const created = await scim.post('/Users', bjensen)
    assert.is(created.status, 201)
    assert.is(created.body.externalId, 'bjensen')
    const duplicate = await scim.post('/Users', { ...bjensen, userName: 'BJensen@Example.com' })
    assert.is(duplicate.status, 409)
    assert.is(duplicate.body.scimType, 'uniqueness')
    assert.is(duplicate.body.status, '409')
    const sameExternal = await scim.post('/Users', { ...bjensen, userName: 'other@example.com' })
    assert.is(sameExternal.body.scimType, 'uniqueness')

    for (const n of [1, 2]) await scim.post('/Users', { userName: `p${n}@example.com` })
    const first = await scim.get('/Users?startIndex=1&count=2')
    assert.is(first.body.totalResults, 3)
    assert.is(first.body.itemsPerPage, 2)
    assert.is(first.body.Resources[0].id, created.body.id)
    const last = await scim.get('/Users?startIndex=3&count=2')
    assert.is(last.body.Resources.length, 1)
    assert.is(last.body.startIndex, 3)
    const none = await scim.get('/Users?count=0')
    assert.is(none.body.totalResults, 3)
    assert.equal(none.body.Resources, [])
    const clamped = await scim.get('/Users?count=100000&startIndex=-4')
    assert.is(clamped.body.startIndex, 1)

    const stale = await scimCall(t, token, 'PUT', `/Users/${created.body.id}`, {
      json: { ...bjensen, displayName: 'Babs' },
      headers: { 'if-match': 'W/"not-the-version"' },
    })
    assert.is(stale.status, 412)
    const current = await scimCall(t, token, 'PUT', `/Users/${created.body.id}`, {
      json: { ...bjensen, displayName: 'Babs' },
      headers: { 'if-match': created.body.meta.version },
    })
    assert.is(current.status, 200)

    for (const filter of [
      'userName sw "b"',
      'emails co "example"',
      'userName eq "a" and active eq true',
      'title eq "x"',
    ]) {
      const bad = await scim.get(`/Users?filter=${encodeURIComponent(filter)}`)
      assert.is(bad.status, 400, filter)
      assert.equal(bad.body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'])
      assert.is(bad.body.scimType, 'invalidFilter')
      assert.is(bad.body.status, '400')
      assert.match(bad.headers.get('content-type') ?? '', /^application\/scim\+json/)
    }
    const notJson = await scim.call('POST', '/Users', { body: '{"userName":' })
    assert.is(notJson.body.scimType, 'invalidSyntax')
    const plainJson = await scim.call('POST', '/Users', {
      body: JSON.stringify({ userName: 'json@example.com' }),
      contentType: 'application/json',
    })
    assert.is(plainJson.status, 201, 'application/json bodies are accepted')
    const text = await scim.call('POST', '/Users', { body: 'userName=x', contentType: 'text/plain' })
    assert.is(text.status, 415)
    const huge = await scim.call('POST', '/Users', {
      body: JSON.stringify({ userName: 'big@example.com', displayName: 'x'.repeat(1100_000) }),
    })
    assert.is(huge.status, 413)
    const noEmail = await scim.post('/Users', { userName: 'bjensen' })
    assert.is(noEmail.body.scimType, 'invalidValue')
    const badOp = await scim.patch(`/Users/${created.body.id}`, patchOp({ op: 'move', path: 'active', value: true }))
    assert.is(badOp.body.scimType, 'invalidSyntax')
    const noPath = await scim.patch(`/Users/${created.body.id}`, patchOp({ op: 'remove' }))
    assert.is(noPath.body.scimType, 'noTarget')
    const badActive = await scim.patch(
      `/Users/${created.body.id}`,
      patchOp({ op: 'replace', path: 'active', value: 'maybe' }),
    )
    assert.is(badActive.body.scimType, 'invalidValue')
    const badEmailPath = await scim.patch(
      `/Users/${created.body.id}`,
      patchOp({ op: 'replace', path: 'emails[primary eq true].value', value: 'a@b.c' }),
    )
    assert.is(badEmailPath.body.scimType, 'invalidPath')
    const missing = await scim.get('/Users/scu_00000000000000000000000000')
    assert.is(missing.status, 404)
    assert.is(missing.body.status, '404')
  } finally {
    await t.close()
  }
})

test('a SCIM write with an Idempotency-Key is answered once and replayed, body and all', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'idem')
    const token = await ownerScimToken(t, org)
    const send = () =>
      scimCall(t, token, 'POST', '/Users', {
        json: { schemas: [USER_SCHEMA], userName: 'once@idem.test' },
        headers: { 'idempotency-key': 'scim-create-1' },
      })
    const first = await send()
    assert.is(first.status, 201)
    const replay = await send()
    assert.is(replay.status, 201)
    assert.is(replay.headers.get('idempotency-replayed'), 'true')
    assert.is(replay.body.id, first.body.id)
    assert.is(replay.headers.get('location'), first.headers.get('location'))
    const list = await scimClient(t, token).get(`/Users?filter=${encodeURIComponent('userName eq "once@idem.test"')}`)
    assert.is(list.body.totalResults, 1)
  } finally {
    await t.close()
  }
})

test('the discovery endpoints describe Users and Groups, and the OpenAPI document lists every SCIM route', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'disc')
    const scim = scimClient(t, await ownerScimToken(t, org))
    const types = await scim.get('/ResourceTypes')
    assert.equal(
      types.body.Resources.map((r: { name: string }) => r.name),
      ['User', 'Group'],
    )
    assert.is((await scim.get('/ResourceTypes/User')).body.endpoint, '/Users')
    const schemas = await scim.get('/Schemas')
    assert.is(schemas.body.totalResults, 2)
    const user = await scim.get('/Schemas/urn:ietf:params:scim:schemas:core:2.0:User')
    assert.ok(user.body.attributes.some((a: { name: string }) => a.name === 'userName'))
    assert.is((await scim.get('/Schemas/urn:nope')).status, 404)
    const config = await scim.get('/ServiceProviderConfig')
    assert.is(config.body.filter.maxResults, 200)
    assert.is(config.body.bulk.supported, false)
    const doc = t.app.openapi() as { paths: Record<string, Record<string, { tags?: string[]; security?: unknown }>> }
    const scimOps = Object.entries(doc.paths).filter(([path]) => path.startsWith('/scim/v2'))
    assert.is(scimOps.flatMap(([, ops]) => Object.values(ops)).length, 17)
    for (const [, ops] of scimOps)
      for (const op of Object.values(ops)) {
        assert.equal(op.tags, ['scim'])
        assert.equal(op.security, [{ scimToken: [] }])
      }
  } finally {
    await t.close()
  }
})

test.run()
