import { assert, suite } from '../../../tests/harness.ts'
import { errorResponse, type ApiError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { asScimError } from './scim-error.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { ownerScimToken, patchOp, scimClient, USER_SCHEMA } from './scim-test-kit.ts'
import { MAX_SCIM_TOKENS } from './scim-tokens.ts'
import { MAX_SCIM_MEMBERS, MAX_SCIM_OPERATIONS } from './scim-protocol.ts'

const test = suite('control-plane/scim-tokens')

test('the owner creates a SCIM token shown once, lists it without its secret, and revoking it ends it', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'tok')
    const created = await t.client.post('/v1/org/scim-tokens', { token: org.owner.token, json: { name: 'Okta' } })
    assert.is(created.status, 201)
    const token: string = created.body.token
    assert.match(token, /^scim_[A-Za-z0-9_-]{40,}$/)
    const list = await t.client.get('/v1/org/scim-tokens', { token: org.owner.token })
    assert.is(list.body.items.length, 1)
    assert.is(list.body.items[0].name, 'Okta')
    assert.not.ok(JSON.stringify(list.body).includes(token), 'the list never holds the token')
    const stored = await t.app.database.db.selectFrom('scim_token').selectAll().execute()
    assert.not.ok(JSON.stringify(stored).includes(token), 'only a hash is stored')

    const scim = scimClient(t, token)
    const config = await scim.get('/ServiceProviderConfig')
    assert.is(config.status, 200)
    assert.is(config.body.patch.supported, true)
    assert.is(
      (await t.client.get('/v1/org/scim-tokens', { token: org.owner.token })).body.items[0].lastUsedAt !== null,
      true,
    )

    const revoked = await t.client.delete(`/v1/org/scim-tokens/${created.body.item.id}`, { token: org.owner.token })
    assert.is(revoked.status, 204)
    const after = await scim.get('/Users')
    assert.is(after.status, 401)
    assert.equal(after.body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'])
    assert.is(after.body.status, '401')
    assert.match(after.headers.get('www-authenticate') ?? '', /^Bearer/)
  } finally {
    await t.close()
  }
})

test('only the owner with a session manages SCIM tokens, and only a SCIM token reaches /scim/v2', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'who')
    for (const caller of [{ token: org.admin.token }, { token: org.member.token }, { apiKey: org.ownerKey.key }]) {
      assert.is((await t.client.post('/v1/org/scim-tokens', { ...caller, json: { name: 'x' } })).status, 403)
      assert.is((await t.client.get('/v1/org/scim-tokens', caller)).status, 403)
    }
    const anonymous = await scimClient(t, null).get('/Users')
    assert.is(anonymous.status, 401)
    assert.is(anonymous.body.status, '401')
    // A session or an API key is not a SCIM credential, whoever holds it.
    assert.is((await scimClient(t, org.owner.token).get('/Users')).status, 401)
    assert.is((await scimClient(t, org.ownerKey.key).get('/Users')).status, 401)
    assert.is((await scimClient(t, 'scim_not-a-real-token').get('/Users')).status, 401)
  } finally {
    await t.close()
  }
})

test("another organization's SCIM token sees none of this organization's Users or Groups", async () => {
  const t = await startTestControlPlane()
  try {
    const a = await buildFixtureOrg(t.client, 'isoa')
    const b = await buildFixtureOrg(t.client, 'isob')
    const scimA = scimClient(t, await ownerScimToken(t, a))
    const scimB = scimClient(t, await ownerScimToken(t, b))
    const user = await scimA.post('/Users', { schemas: [USER_SCHEMA], userName: 'alice@isoa.test' })
    assert.is(user.status, 201)
    const group = await scimA.post('/Groups', { displayName: 'A team', members: [{ value: user.body.id }] })
    assert.is(group.status, 201)
    const list = await scimB.get(`/Users?filter=${encodeURIComponent('userName eq "alice@isoa.test"')}`)
    assert.is(list.body.totalResults, 0)
    assert.is((await scimB.get(`/Users/${user.body.id}`)).status, 404)
    assert.is(
      (await scimB.patch(`/Users/${user.body.id}`, { Operations: [{ op: 'replace', value: { active: false } }] }))
        .status,
      404,
    )
    assert.is((await scimB.delete(`/Users/${user.body.id}`)).status, 404)
    assert.is((await scimB.get(`/Groups/${group.body.id}`)).status, 404)
    const teamsB = await scimB.get('/Groups')
    assert.not.ok(JSON.stringify(teamsB.body).includes(group.body.id))
    // B cannot put A's User in its own Group either.
    const foreign = await scimB.post('/Groups', { displayName: 'B team', members: [{ value: user.body.id }] })
    assert.is(foreign.status, 400)
    assert.is(foreign.body.scimType, 'invalidValue')
    assert.is((await scimA.get(`/Users/${user.body.id}`)).body.active, true)
  } finally {
    await t.close()
  }
})

test("an API error raised on a SCIM route keeps its status and code and gains SCIM's error fields", async () => {
  const reshaped = asScimError(controlPlaneError('owner_protected', 'The owner cannot be removed')) as ApiError
  const response = errorResponse(reshaped)
  assert.is(response.status, 409)
  assert.match(response.headers.get('content-type') ?? '', /^application\/scim\+json/)
  const body = await response.json()
  assert.equal(body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'])
  assert.is(body.status, '409')
  assert.is(body.code, 'owner_protected')
  assert.is(body.detail, 'The owner cannot be removed')
  assert.is(asScimError(reshaped), reshaped, 'an error already in SCIM format passes unchanged')
})

test('an organization holds at most its limit of SCIM tokens, an unknown one is 404, and oversized requests are tooMany', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'lim')
    for (let i = 0; i < MAX_SCIM_TOKENS; i++) await ownerScimToken(t, org, `idp-${i}`)
    const over = await t.client.post('/v1/org/scim-tokens', { token: org.owner.token, json: { name: 'one more' } })
    assert.is(over.status, 409)
    assert.is(over.body.code, 'scim_token_limit')
    const unknown = await t.client.delete(`/v1/org/scim-tokens/${newId('sct')}`, { token: org.owner.token })
    assert.is(unknown.status, 404)
    assert.is(unknown.body.code, 'scim_token_not_found')

    // Revoking one makes room again; that token then works for the SCIM endpoints.
    const first = (await t.client.get('/v1/org/scim-tokens', { token: org.owner.token })).body.items[0]
    assert.is((await t.client.delete(`/v1/org/scim-tokens/${first.id}`, { token: org.owner.token })).status, 204)
    const scim = scimClient(t, await ownerScimToken(t, org, 'replacement'))
    const user = await scim.post('/Users', { schemas: [USER_SCHEMA], userName: 'many@lim.test', active: true })
    assert.is(user.status, 201)
    const operations = Array.from({ length: MAX_SCIM_OPERATIONS + 1 }, () => ({
      op: 'replace',
      path: 'displayName',
      value: 'x',
    }))
    const tooManyOps = await scim.patch(`/Users/${user.body.id}`, patchOp(...operations))
    assert.is(tooManyOps.status, 400)
    assert.is(tooManyOps.body.scimType, 'tooMany')
    const group = await scim.post('/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'Too big',
      members: Array.from({ length: MAX_SCIM_MEMBERS + 1 }, (_, i) => ({ value: `usr_${i}` })),
    })
    assert.is(group.status, 400)
    assert.is(group.body.scimType, 'tooMany')
    // Nothing was half-written: the user kept its name and no group exists.
    assert.is((await scim.get(`/Users/${user.body.id}`)).body.displayName ?? null, null)
    assert.is((await scim.get('/Groups')).body.totalResults, 0)
  } finally {
    await t.close()
  }
})

test.run()
