/**
 * The role matrix for identity and administration routes, generated from the policy table by
 * `testing/role-matrix.ts`: every route × {owner, admin, member, the owner's API key, the admin's
 * API key, no credential} must answer exactly the status the table implies. Every request goes
 * through the contract client, so each response also matches the declared schema. A route with
 * one of these tags and no entry here fails the suite.
 */
import { assert, suite } from '../../tests/harness.ts'
import { buildFixtureOrg, signUpPerson } from './testing/org-fixture.ts'
import { MATRIX_CALLERS, runRoleMatrix, type MatrixRequests, type MatrixWorld } from './testing/role-matrix.ts'
import { startTestControlPlane } from './testing/test-control-plane.ts'

const test = suite('control-plane/role-matrix', { timeoutMs: 120_000 })

/** The route tags (families) this matrix covers; later families run their own matrix. */
const TAGS = [
  'system',
  'auth',
  'identity',
  'organization',
  'roles',
  'audit',
  'members',
  'invitations',
  'teams',
  'api-keys',
]

async function freshMember(w: MatrixWorld): Promise<string> {
  const email = `fresh${w.seq()}@matrix.test`
  const invite = await w.client.post('/v1/invitations', { token: w.org.owner.token, json: { email } })
  const person = await signUpPerson(w.client, email, invite.body.token)
  return (await w.client.get('/v1/me', { token: person.token })).body.member.id
}
async function freshTeam(w: MatrixWorld, memberIds: string[] = []): Promise<string> {
  return (await w.client.post('/v1/teams', { token: w.org.owner.token, json: { name: `team ${w.seq()}`, memberIds } }))
    .body.item.id
}

/** One request per operation, valid for an allowed caller. Keyed by operationId. */
const REQUESTS: MatrixRequests = {
  getHealth: async () => ({ path: '/health' }),
  getReady: async () => ({ path: '/ready' }),
  getOpenApi: async () => ({ path: '/openapi.json' }),
  signUp: async (w) => ({
    path: '/v1/auth/sign-up',
    json: { email: `new${w.seq()}@matrix.test`, password: 'long enough', name: 'New' },
  }),
  signIn: async (w) => ({
    path: '/v1/auth/sign-in',
    json: { email: w.org.member.email, password: w.org.member.password },
  }),
  signOut: async () => ({ path: '/v1/auth/sign-out', freshSession: true }),
  getMe: async () => ({ path: '/v1/me' }),
  listMyOrganizations: async () => ({ path: '/v1/me/orgs' }),
  setActiveOrganization: async (w) => ({
    path: '/v1/me/active-org',
    json: { organizationId: w.org.orgId },
    freshSession: true,
  }),
  createOrganization: async (w) => ({ path: '/v1/orgs', json: { name: `Org ${w.seq()}` }, freshSession: true }),
  acceptInvitation: async (w, caller) => {
    const person =
      caller === 'admin' || caller === 'adminKey' ? w.org.admin : caller === 'member' ? w.org.member : w.org.owner
    const invite = await w.client.post('/v1/invitations', { token: w.other.owner.token, json: { email: person.email } })
    return { path: '/v1/invitations/accept', json: { token: invite.body.token }, freshSession: true }
  },
  getOrganization: async () => ({ path: '/v1/org' }),
  updateOrganization: async (w) => ({ path: '/v1/org', json: { name: `Renamed ${w.seq()}` } }),
  listRoles: async () => ({ path: '/v1/roles' }),
  listAuditEvents: async () => ({ path: '/v1/audit-events?limit=5' }),
  exportAuditEvents: async () => ({ path: '/v1/audit-events/export?action=none' }),
  listMembers: async () => ({ path: '/v1/members?limit=2' }),
  getMember: async (w) => ({ path: `/v1/members/${w.org.member.memberId}` }),
  changeMemberRole: async (w) => ({ path: `/v1/members/${await freshMember(w)}`, json: { role: 'admin' } }),
  removeMember: async (w) => ({ path: `/v1/members/${await freshMember(w)}` }),
  // Succeeding hands ownership away (and disables the owner's keys), so it runs in a fresh world.
  transferOwnership: async (w) => ({ path: `/v1/members/${await freshMember(w)}/transfer-ownership` }),
  listInvitations: async () => ({ path: '/v1/invitations' }),
  createInvitation: async (w) => ({
    path: '/v1/invitations',
    json: { email: `invitee${w.seq()}@matrix.test`, role: 'member' },
  }),
  getInvitation: async (w) => ({ path: `/v1/invitations/${w.invitationId}` }),
  cancelInvitation: async (w) => {
    const invite = await w.client.post('/v1/invitations', {
      token: w.org.owner.token,
      json: { email: `cancel${w.seq()}@matrix.test` },
    })
    return { path: `/v1/invitations/${invite.body.item.id}/cancel` }
  },
  listTeams: async () => ({ path: '/v1/teams' }),
  createTeam: async (w) => ({ path: '/v1/teams', json: { name: `created ${w.seq()}` } }),
  getTeam: async (w) => ({ path: `/v1/teams/${w.teamId}` }),
  updateTeam: async (w) => ({ path: `/v1/teams/${w.teamId}`, json: { name: `renamed ${w.seq()}` } }),
  deleteTeam: async (w) => ({ path: `/v1/teams/${await freshTeam(w)}` }),
  listTeamMembers: async (w) => ({ path: `/v1/teams/${w.teamId}/members` }),
  addTeamMember: async (w) => ({
    path: `/v1/teams/${await freshTeam(w)}/members`,
    json: { memberId: w.org.member.memberId },
  }),
  removeTeamMember: async (w) => ({
    path: `/v1/teams/${await freshTeam(w, [w.org.member.memberId])}/members/${w.org.member.memberId}`,
  }),
  listApiKeys: async () => ({ path: '/v1/api-keys' }),
  createApiKey: async () => ({ path: '/v1/api-keys', json: { name: 'matrix key' } }),
  revokeApiKey: async (w) => {
    const key = await w.client.post('/v1/api-keys', { token: w.org.owner.token, json: { name: 'to revoke' } })
    return { path: `/v1/api-keys/${key.body.item.id}` }
  },
}

test('every identity and administration route answers each caller with the status the policy table implies', async () => {
  const t = await startTestControlPlane()
  try {
    const { failures, missing, checked } = await runRoleMatrix(t, {
      requests: REQUESTS,
      tags: TAGS,
      isolated: ['transferOwnership'],
    })
    assert.equal(missing, [], 'every route has a matrix entry')
    assert.equal(failures, [])
    const covered = t.app.contract.routes.filter((r) => (r.tags ?? []).some((tag) => TAGS.includes(tag)))
    assert.is(checked, covered.length * MATRIX_CALLERS.length)
    assert.equal(
      t.app.contract.routes.filter((r) => !r.tags?.length).map((r) => r.operationId),
      [],
      'every route names its family in tags',
    )
  } finally {
    await t.close()
  }
})

test('a 403 names the permission the caller lacks', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'denied')
    const res = await t.client.post('/v1/api-keys', { apiKey: org.ownerKey.key, json: { name: 'key from key' } })
    assert.is(res.status, 403)
    assert.equal(res.body.details, { permission: 'api_keys.manage', role: 'owner', credential: 'apiKey' })
    const member = await t.client.get('/v1/audit-events', { token: org.member.token })
    assert.is(member.status, 403)
    assert.is(member.body.details.permission, 'audit.read')
  } finally {
    await t.close()
  }
})

test.run()
