/**
 * The role matrix, generated from the policy table: every route × {owner, admin, member, the
 * owner's API key, the admin's API key, no credential} must answer exactly the status the table
 * and the route's rule imply (its success status when allowed, 403 when not, 401 without a
 * credential). Every request goes through the contract client, so each response also matches
 * the declared schema. A route without an entry here fails the suite.
 */
import { assert, suite } from '../../tests/harness.ts'
import type { AnyRoute } from '../core/route.ts'
import type { ControlPlanePrincipal } from './auth.ts'
import { allows, type ControlPlaneRule, type CredentialKind, type Role } from './policy.ts'
import type { CallOptions, ContractClient } from './testing/contract-client.ts'
import { buildFixtureOrg, signUpPerson, type FixtureOrg } from './testing/org-fixture.ts'
import { startTestControlPlane } from './testing/test-control-plane.ts'

const test = suite('control-plane/role-matrix', { timeoutMs: 120_000 })

type Caller = 'owner' | 'admin' | 'member' | 'ownerKey' | 'adminKey' | 'none'
const CALLERS: Caller[] = ['owner', 'admin', 'member', 'ownerKey', 'adminKey', 'none']

interface Req {
  path: string
  json?: unknown
  /** The call changes the session it is made with; use a fresh sign-in for it. */
  freshSession?: boolean
}

interface World {
  client: ContractClient
  org: FixtureOrg
  other: FixtureOrg
  teamId: string
  invitationId: string
  seq: () => number
}

async function freshMember(w: World): Promise<string> {
  const email = `fresh${w.seq()}@matrix.test`
  const invite = await w.client.post('/v1/invitations', { token: w.org.owner.token, json: { email } })
  const person = await signUpPerson(w.client, email, invite.body.token)
  return (await w.client.get('/v1/me', { token: person.token })).body.member.id
}
async function freshTeam(w: World, memberIds: string[] = []): Promise<string> {
  return (await w.client.post('/v1/teams', { token: w.org.owner.token, json: { name: `team ${w.seq()}`, memberIds } })).body.item.id
}

/** Operations whose success changes the callers themselves: each caller gets a fresh organization. */
const ISOLATED = new Set(['transferOwnership'])

/** One request per operation, valid for an allowed caller. Keyed by operationId. */
const REQUESTS: Record<string, (w: World, caller: Caller) => Promise<Req>> = {
  getHealth: async () => ({ path: '/health' }),
  getOpenApi: async () => ({ path: '/openapi.json' }),
  signUp: async (w) => ({ path: '/v1/auth/sign-up', json: { email: `new${w.seq()}@matrix.test`, password: 'long enough', name: 'New' } }),
  signIn: async (w) => ({ path: '/v1/auth/sign-in', json: { email: w.org.member.email, password: w.org.member.password } }),
  signOut: async () => ({ path: '/v1/auth/sign-out', freshSession: true }),
  getMe: async () => ({ path: '/v1/me' }),
  listMyOrganizations: async () => ({ path: '/v1/me/orgs' }),
  setActiveOrganization: async (w) => ({ path: '/v1/me/active-org', json: { organizationId: w.org.orgId }, freshSession: true }),
  createOrganization: async (w) => ({ path: '/v1/orgs', json: { name: `Org ${w.seq()}` }, freshSession: true }),
  acceptInvitation: async (w, caller) => {
    const person = caller === 'admin' || caller === 'adminKey' ? w.org.admin : caller === 'member' ? w.org.member : w.org.owner
    const invite = await w.client.post('/v1/invitations', { token: w.other.owner.token, json: { email: person.email } })
    return { path: '/v1/invitations/accept', json: { token: invite.body.token }, freshSession: true }
  },
  getOrganization: async () => ({ path: '/v1/org' }),
  updateOrganization: async (w) => ({ path: '/v1/org', json: { name: `Renamed ${w.seq()}` } }),
  listRoles: async () => ({ path: '/v1/roles' }),
  listAuditEvents: async () => ({ path: '/v1/audit-events?limit=5' }),
  listMembers: async () => ({ path: '/v1/members?limit=2' }),
  getMember: async (w) => ({ path: `/v1/members/${w.org.member.memberId}` }),
  changeMemberRole: async (w) => ({ path: `/v1/members/${await freshMember(w)}`, json: { role: 'admin' } }),
  removeMember: async (w) => ({ path: `/v1/members/${await freshMember(w)}` }),
  // Succeeding hands ownership away (and disables the owner's keys), so it runs in a fresh world.
  transferOwnership: async (w) => ({ path: `/v1/members/${await freshMember(w)}/transfer-ownership` }),
  listInvitations: async () => ({ path: '/v1/invitations' }),
  createInvitation: async (w) => ({ path: '/v1/invitations', json: { email: `invitee${w.seq()}@matrix.test`, role: 'member' } }),
  getInvitation: async (w) => ({ path: `/v1/invitations/${w.invitationId}` }),
  cancelInvitation: async (w) => {
    const invite = await w.client.post('/v1/invitations', { token: w.org.owner.token, json: { email: `cancel${w.seq()}@matrix.test` } })
    return { path: `/v1/invitations/${invite.body.item.id}/cancel` }
  },
  listTeams: async () => ({ path: '/v1/teams' }),
  createTeam: async (w) => ({ path: '/v1/teams', json: { name: `created ${w.seq()}` } }),
  getTeam: async (w) => ({ path: `/v1/teams/${w.teamId}` }),
  updateTeam: async (w) => ({ path: `/v1/teams/${w.teamId}`, json: { name: `renamed ${w.seq()}` } }),
  deleteTeam: async (w) => ({ path: `/v1/teams/${await freshTeam(w)}` }),
  listTeamMembers: async (w) => ({ path: `/v1/teams/${w.teamId}/members` }),
  addTeamMember: async (w) => ({ path: `/v1/teams/${await freshTeam(w)}/members`, json: { memberId: w.org.member.memberId } }),
  removeTeamMember: async (w) => ({ path: `/v1/teams/${await freshTeam(w, [w.org.member.memberId])}/members/${w.org.member.memberId}` }),
  listApiKeys: async () => ({ path: '/v1/api-keys' }),
  createApiKey: async () => ({ path: '/v1/api-keys', json: { name: 'matrix key' } }),
  revokeApiKey: async (w) => {
    const key = await w.client.post('/v1/api-keys', { token: w.org.owner.token, json: { name: 'to revoke' } })
    return { path: `/v1/api-keys/${key.body.item.id}` }
  },
}

function successStatus(route: AnyRoute): number {
  return Math.min(...Object.keys(route.responses).map(Number).filter((s) => s >= 200 && s < 300))
}

function credentialOf(caller: Caller): { role: Role; kind: CredentialKind } | null {
  switch (caller) {
    case 'owner': return { role: 'owner', kind: 'session' }
    case 'admin': return { role: 'admin', kind: 'session' }
    case 'member': return { role: 'member', kind: 'session' }
    case 'ownerKey': return { role: 'owner', kind: 'apiKey' }
    case 'adminKey': return { role: 'admin', kind: 'apiKey' }
    case 'none': return null
  }
}

/** The status the policy table and the rule imply for a caller. */
function expectedStatus(route: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>, caller: Caller): number {
  const rule = route.auth
  if (rule.kind === 'public') return successStatus(route)
  const credential = credentialOf(caller)
  if (!credential) return 401
  if (rule.kind === 'identity') return rule.sessionOnly && credential.kind === 'apiKey' ? 403 : successStatus(route)
  return allows(rule.permission, credential.role, credential.kind) ? successStatus(route) : 403
}

test('every route answers each caller with the status the policy table implies', async () => {
  const t = await startTestControlPlane()
  try {
    let n = 0
    const makeWorld = async (label: string): Promise<World> => {
      const org = await buildFixtureOrg(t.client, label)
      const other = await buildFixtureOrg(t.client, `${label}-other`)
      const team = await t.client.post('/v1/teams', { token: org.owner.token, json: { name: 'standing team', memberIds: [org.member.memberId] } })
      const invitation = await t.client.post('/v1/invitations', { token: org.owner.token, json: { email: `standing@${label}.test` } })
      return { client: t.client, org, other, teamId: team.body.item.id, invitationId: invitation.body.item.id, seq: () => ++n }
    }
    const shared = await makeWorld('m')
    const routes = t.app.contract.routes
    const missing = routes.map((r) => r.operationId).filter((id) => !REQUESTS[id])
    assert.equal(missing, [], 'every route has a matrix entry')
    const failures: string[] = []
    let checked = 0
    for (const route of routes) {
      for (const caller of CALLERS) {
        const w = ISOLATED.has(route.operationId) ? await makeWorld(`iso${n++}`) : shared
        const { org } = w
        const req = await REQUESTS[route.operationId]!(w, caller)
        const options: CallOptions = req.json !== undefined ? { json: req.json } : {}
        const person = caller === 'owner' ? org.owner : caller === 'admin' ? org.admin : caller === 'member' ? org.member : null
        if (person) {
          options.token = person.token
          if (req.freshSession) options.token = (await t.client.post('/v1/auth/sign-in', { json: { email: person.email, password: person.password } })).body.session.token
        }
        if (caller === 'ownerKey') options.apiKey = org.ownerKey.key
        if (caller === 'adminKey') options.apiKey = org.adminKey.key
        const res = await t.client.call(route.method, req.path, options)
        const expected = expectedStatus(route, caller)
        checked++
        if (res.status !== expected) failures.push(`${route.operationId} as ${caller}: expected ${expected}, got ${res.status} ${JSON.stringify(res.body)}`)
      }
    }
    assert.equal(failures, [])
    assert.is(checked, routes.length * CALLERS.length)
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
