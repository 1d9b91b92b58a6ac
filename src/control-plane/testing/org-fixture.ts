/**
 * Builds an organization through the public API the way people would: the owner signs up and
 * creates it, then invites an admin and a member who sign up with their invitation tokens, and
 * each role gets an API key where the policy allows one. Used by isolation, role-matrix and
 * later control-plane suites.
 * @module
 */
import type { ContractClient } from './contract-client.ts'

/** One person in a fixture organization. */
export interface FixturePerson {
  email: string
  password: string
  token: string
  userId: string
  memberId: string
}

/** A fixture organization. */
export interface FixtureOrg {
  orgId: string
  owner: FixturePerson
  admin: FixturePerson
  member: FixturePerson
  /** API keys created by the owner and by the admin. */
  ownerKey: { id: string; key: string }
  adminKey: { id: string; key: string }
}

function expect(status: number, got: { status: number; body: unknown }, what: string): void {
  if (got.status !== status) throw new Error(`fixture: ${what} answered ${got.status}: ${JSON.stringify(got.body)}`)
}

/** Signs up a person (open sign-up or with an invitation token). */
export async function signUpPerson(
  client: ContractClient,
  email: string,
  invitationToken?: string,
): Promise<{ token: string; userId: string; password: string }> {
  const password = `pw-${email}-secret`
  const res = await client.post('/v1/auth/sign-up', {
    json: { email, password, name: email.split('@')[0], ...(invitationToken ? { invitationToken } : {}) },
  })
  expect(201, res, `sign-up ${email}`)
  return { token: res.body.session.token, userId: res.body.user.id, password }
}

/** Creates an organization with an owner, an admin and a member, plus owner and admin API keys. */
export async function buildFixtureOrg(client: ContractClient, label: string): Promise<FixtureOrg> {
  const ownerEmail = `owner@${label}.test`
  const owner = await signUpPerson(client, ownerEmail)
  const org = await client.post('/v1/orgs', { token: owner.token, json: { name: `Org ${label}` } })
  expect(201, org, 'create org')
  const orgId: string = org.body.item.id
  const me = await client.get('/v1/me', { token: owner.token })
  const people: Record<string, FixturePerson> = { owner: { email: ownerEmail, ...owner, memberId: me.body.member.id } }
  for (const role of ['admin', 'member'] as const) {
    const email = `${role}@${label}.test`
    const invite = await client.post('/v1/invitations', { token: owner.token, json: { email, role } })
    expect(201, invite, `invite ${role}`)
    const person = await signUpPerson(client, email, invite.body.token)
    const whoami = await client.get('/v1/me', { token: person.token })
    expect(200, whoami, 'me')
    people[role] = { email, ...person, memberId: whoami.body.member.id }
  }
  const key = async (token: string) => {
    const res = await client.post('/v1/api-keys', { token, json: { name: 'fixture key' } })
    expect(201, res, 'create api key')
    return { id: res.body.item.id as string, key: res.body.key as string }
  }
  return {
    orgId,
    owner: people.owner!,
    admin: people.admin!,
    member: people.member!,
    ownerKey: await key(owner.token),
    adminKey: await key(people.admin!.token),
  }
}
