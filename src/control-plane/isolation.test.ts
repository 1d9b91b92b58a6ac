/**
 * The isolation matrix: two organizations with data; every route that takes an id is called by
 * organization A (session and API key) with organization B's ids and must answer 404, exactly as
 * for an id that never existed, and B's state (members, invitations, teams and their members,
 * API keys, audit trail) must be byte-for-byte unchanged afterwards.
 */
import { assert, suite } from '../../tests/harness.ts'
import { POLICY } from './policy.ts'
import type { CallOptions, ContractClient } from './testing/contract-client.ts'
import { buildFixtureOrg, type FixtureOrg } from './testing/org-fixture.ts'
import { startTestControlPlane } from './testing/test-control-plane.ts'

const test = suite('control-plane/isolation', { timeoutMs: 60_000 })

interface Side {
  org: FixtureOrg
  teamId: string
  invitationId: string
}

async function seed(client: ContractClient, org: FixtureOrg): Promise<Side> {
  const team = await client.post('/v1/teams', {
    token: org.owner.token,
    json: { name: 'core', memberIds: [org.member.memberId, org.admin.memberId] },
  })
  const invitation = await client.post('/v1/invitations', {
    token: org.owner.token,
    json: { email: `pending-${org.owner.email}`, role: 'admin' },
  })
  return { org, teamId: team.body.item.id, invitationId: invitation.body.item.id }
}

async function snapshot(client: ContractClient, side: Side): Promise<string> {
  const token = side.org.owner.token
  const parts = await Promise.all([
    client.get('/v1/org', { token }),
    client.get('/v1/members', { token }),
    client.get('/v1/invitations', { token }),
    client.get('/v1/teams', { token }),
    client.get(`/v1/teams/${side.teamId}/members`, { token }),
    client.get('/v1/api-keys', { token }),
    client.get('/v1/audit-events?limit=100', { token }),
  ])
  for (const part of parts) assert.is(part.status, 200)
  return JSON.stringify(parts.map((p) => p.body))
}

test("every id-taking route given the other organization's ids is 404 and changes nothing", async () => {
  const t = await startTestControlPlane()
  try {
    const a = await seed(t.client, await buildFixtureOrg(t.client, 'a'))
    const b = await seed(t.client, await buildFixtureOrg(t.client, 'b'))
    const before = await snapshot(t.client, b)

    // Each entry: a request by A that names B's resources. Built per route so none is forgotten.
    const attempts: Record<string, Array<{ method: string; path: string; json?: unknown }>> = {
      getMember: [{ method: 'GET', path: `/v1/members/${b.org.member.memberId}` }],
      changeMemberRole: [{ method: 'PATCH', path: `/v1/members/${b.org.member.memberId}`, json: { role: 'admin' } }],
      removeMember: [{ method: 'DELETE', path: `/v1/members/${b.org.member.memberId}` }],
      transferOwnership: [{ method: 'POST', path: `/v1/members/${b.org.member.memberId}/transfer-ownership` }],
      getInvitation: [{ method: 'GET', path: `/v1/invitations/${b.invitationId}` }],
      cancelInvitation: [{ method: 'POST', path: `/v1/invitations/${b.invitationId}/cancel` }],
      getTeam: [{ method: 'GET', path: `/v1/teams/${b.teamId}` }],
      updateTeam: [{ method: 'PATCH', path: `/v1/teams/${b.teamId}`, json: { name: 'taken over' } }],
      deleteTeam: [{ method: 'DELETE', path: `/v1/teams/${b.teamId}` }],
      listTeamMembers: [{ method: 'GET', path: `/v1/teams/${b.teamId}/members` }],
      addTeamMember: [
        { method: 'POST', path: `/v1/teams/${b.teamId}/members`, json: { memberId: a.org.member.memberId } },
        { method: 'POST', path: `/v1/teams/${a.teamId}/members`, json: { memberId: b.org.owner.memberId } },
      ],
      removeTeamMember: [
        { method: 'DELETE', path: `/v1/teams/${b.teamId}/members/${b.org.member.memberId}` },
        { method: 'DELETE', path: `/v1/teams/${a.teamId}/members/${b.org.member.memberId}` },
      ],
      revokeApiKey: [{ method: 'DELETE', path: `/v1/api-keys/${b.org.ownerKey.id}` }],
      // Ids in bodies and headers are scoped the same way.
      createTeam: [
        {
          method: 'POST',
          path: '/v1/teams',
          json: { name: 'smuggle', memberIds: [a.org.member.memberId, b.org.member.memberId] },
        },
      ],
      setActiveOrganization: [{ method: 'POST', path: '/v1/me/active-org', json: { organizationId: b.org.orgId } }],
      getOrganization: [{ method: 'GET', path: '/v1/org', json: undefined }],
    }
    // This file covers the identity and administration families; later families keep their own matrix.
    const tags = ['auth', 'identity', 'organization', 'roles', 'audit', 'members', 'invitations', 'teams', 'api-keys']
    const idRoutes = t.app.contract.routes
      .filter((r) => r.path.includes(':') && (r.tags ?? []).some((tag) => tags.includes(tag)))
      .map((r) => r.operationId)
    assert.equal(
      idRoutes.filter((id) => !attempts[id]),
      [],
      'every id-taking route is in the matrix',
    )

    const credentials: Array<[string, CallOptions]> = [
      ['owner session', { token: a.org.owner.token }],
      ['owner API key', { apiKey: a.org.ownerKey.key }],
    ]
    const failures: string[] = []
    for (const [label, credential] of credentials) {
      for (const [operationId, list] of Object.entries(attempts)) {
        for (const attempt of list) {
          const options: CallOptions = { ...credential, ...(attempt.json !== undefined ? { json: attempt.json } : {}) }
          // getOrganization exercises the org header: naming B's org is 404 for a non-member.
          if (operationId === 'getOrganization') options.orgId = b.org.orgId
          // Routes that refuse API keys outright answer 403 before looking at any id (revealing
          // nothing); the session row covers their scoping.
          const rule = t.app.contract.routes.find((r) => r.operationId === operationId)!.auth
          const refusesKeys =
            (rule.kind === 'identity' && rule.sessionOnly) || (rule.kind === 'org' && !POLICY[rule.permission].apiKey)
          const expected = credential.apiKey && refusesKeys ? 403 : 404
          const res = await t.client.call(attempt.method, attempt.path, options)
          if (res.status !== expected)
            failures.push(
              `${operationId} ${attempt.method} ${attempt.path} as ${label}: ${res.status} ${JSON.stringify(res.body)}`,
            )
        }
      }
    }
    assert.equal(failures, [])
    assert.is(await snapshot(t.client, b), before, "B's state is unchanged")

    // A's own ids still work with the same credentials, so the 404s above are about scope.
    assert.is((await t.client.get(`/v1/teams/${a.teamId}`, { token: a.org.owner.token })).status, 200)
    assert.is((await t.client.get(`/v1/members/${a.org.member.memberId}`, { apiKey: a.org.ownerKey.key })).status, 200)
  } finally {
    await t.close()
  }
})

test("a 404 for another organization's id is indistinguishable from one for an id that never existed", async () => {
  const t = await startTestControlPlane()
  try {
    const a = await seed(t.client, await buildFixtureOrg(t.client, 'a'))
    const b = await seed(t.client, await buildFixtureOrg(t.client, 'b'))
    const foreign = await t.client.get(`/v1/teams/${b.teamId}`, { token: a.org.owner.token })
    const never = await t.client.get(`/v1/teams/${b.teamId.slice(0, -4)}zzzz`, { token: a.org.owner.token })
    assert.is(foreign.status, 404)
    assert.equal(foreign.body, never.body)
    const malformed = await t.client.get('/v1/teams/not-an-id', { token: a.org.owner.token })
    assert.is(malformed.status, 404)
  } finally {
    await t.close()
  }
})

test('an API key acts only in its own organization, whatever X-Service-Org-Id says', async () => {
  const t = await startTestControlPlane()
  try {
    const a = await buildFixtureOrg(t.client, 'a')
    const b = await buildFixtureOrg(t.client, 'b')
    const own = await t.client.get('/v1/org', { apiKey: a.ownerKey.key, orgId: a.orgId })
    assert.is(own.status, 200)
    assert.is(own.body.item.id, a.orgId)
    assert.is((await t.client.get('/v1/org', { apiKey: a.ownerKey.key, orgId: b.orgId })).status, 404)
    const orgs = await t.client.get('/v1/me/orgs', { apiKey: a.ownerKey.key })
    assert.equal(
      orgs.body.items.map((o: { id: string }) => o.id),
      [a.orgId],
    )
  } finally {
    await t.close()
  }
})

test.run()
