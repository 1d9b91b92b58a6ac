/**
 * The role-matrix runner, generated from the policy table: each route × {owner, admin, member,
 * the owner's API key, the admin's API key, no credential} must answer exactly the status the
 * table and the route's rule imply (its success status when allowed, 403 when not, 401 without a
 * credential). Each family's test supplies one valid request per operation and the route tags it
 * owns; a route with one of those tags but no request entry is reported as missing, so a new
 * route cannot skip the matrix.
 * @module
 */
import type { AnyRoute } from '../../core/route.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import { allows, type ControlPlaneRule, type CredentialKind, type Role } from '../policy.ts'
import type { CallOptions, ContractClient } from './contract-client.ts'
import { buildFixtureOrg, type FixtureOrg } from './org-fixture.ts'
import type { TestControlPlane } from './test-control-plane.ts'

/** Who calls. */
export type MatrixCaller = 'owner' | 'admin' | 'member' | 'ownerKey' | 'adminKey' | 'none'
/** Every caller, in the order they run. */
export const MATRIX_CALLERS: MatrixCaller[] = ['owner', 'admin', 'member', 'ownerKey', 'adminKey', 'none']

/** A request that an allowed caller would succeed with. */
export interface MatrixRequest {
  path: string
  json?: unknown
  /** A raw body (an upload) with its headers, instead of JSON. */
  body?: Uint8Array
  headers?: Record<string, string>
  /** The call changes the session it is made with; use a fresh sign-in for it. */
  freshSession?: boolean
}

/** The data requests are built from: a fixture organization, a second one, and standing objects. */
export interface MatrixWorld {
  client: ContractClient
  org: FixtureOrg
  other: FixtureOrg
  teamId: string
  invitationId: string
  /** A counter for unique names (unique across worlds). */
  seq: () => number
}

/** One request builder per operationId. */
export type MatrixRequests = Record<string, (world: MatrixWorld, caller: MatrixCaller) => Promise<MatrixRequest>>

function successStatus(route: AnyRoute): number {
  return Math.min(
    ...Object.keys(route.responses)
      .map(Number)
      .filter((s) => s >= 200 && s < 300),
  )
}

function credentialOf(caller: MatrixCaller): { role: Role; kind: CredentialKind } | null {
  switch (caller) {
    case 'owner':
      return { role: 'owner', kind: 'session' }
    case 'admin':
      return { role: 'admin', kind: 'session' }
    case 'member':
      return { role: 'member', kind: 'session' }
    case 'ownerKey':
      return { role: 'owner', kind: 'apiKey' }
    case 'adminKey':
      return { role: 'admin', kind: 'apiKey' }
    case 'none':
      return null
  }
}

/** The status the policy table and the rule imply for a caller. */
export function expectedStatus(route: AnyRoute<ControlPlaneRule, ControlPlanePrincipal>, caller: MatrixCaller): number {
  const rule = route.auth
  if (rule.kind === 'public') return successStatus(route)
  // Only a Worker's activity token passes; no person or API key does.
  if (rule.kind === 'workerToken' || rule.kind === 'scim') return 401
  const credential = credentialOf(caller)
  if (!credential) return 401
  if (rule.kind === 'identity') return rule.sessionOnly && credential.kind === 'apiKey' ? 403 : successStatus(route)
  return allows(rule.permission, credential.role, credential.kind) ? successStatus(route) : 403
}

let worlds = 0
// Shared by every world so names built from it never collide in one database.
let counter = 0

/** Builds a world: two fixture organizations, a team with the member in it, a pending invitation. */
export async function makeMatrixWorld(client: ContractClient, label = `w${++worlds}`): Promise<MatrixWorld> {
  const org = await buildFixtureOrg(client, label)
  const other = await buildFixtureOrg(client, `${label}-other`)
  const team = await client.post('/v1/teams', {
    token: org.owner.token,
    json: { name: 'standing team', memberIds: [org.member.memberId] },
  })
  const invitation = await client.post('/v1/invitations', {
    token: org.owner.token,
    json: { email: `standing@${label}.test` },
  })
  return { client, org, other, teamId: team.body.item.id, invitationId: invitation.body.item.id, seq: () => ++counter }
}

/** Options for {@link runRoleMatrix}. */
export interface RoleMatrixOptions {
  requests: MatrixRequests
  /** Route tags this matrix covers; every route with one of them needs a request entry. */
  tags: string[]
  /** Operations whose success changes the callers themselves: each caller gets a fresh world. */
  isolated?: string[]
}

/** Runs the matrix; returns failures (empty when all statuses match), missing entries and the count. */
export async function runRoleMatrix(
  t: TestControlPlane,
  options: RoleMatrixOptions,
): Promise<{ failures: string[]; missing: string[]; checked: number }> {
  const routes = t.app.contract.routes.filter((r) => (r.tags ?? []).some((tag) => options.tags.includes(tag)))
  const missing = routes.map((r) => r.operationId).filter((id) => !options.requests[id])
  const shared = await makeMatrixWorld(t.client)
  const isolated = new Set(options.isolated ?? [])
  const failures: string[] = []
  let checked = 0
  for (const route of routes) {
    const build = options.requests[route.operationId]
    if (!build) continue
    for (const caller of MATRIX_CALLERS) {
      const world = isolated.has(route.operationId) ? await makeMatrixWorld(t.client) : shared
      const { org } = world
      const req = await build(world, caller)
      const call: CallOptions =
        req.json !== undefined
          ? { json: req.json }
          : req.body !== undefined
            ? { body: req.body, headers: req.headers }
            : {}
      const person =
        caller === 'owner' ? org.owner : caller === 'admin' ? org.admin : caller === 'member' ? org.member : null
      if (person) {
        call.token = person.token
        if (req.freshSession)
          call.token = (
            await t.client.post('/v1/auth/sign-in', { json: { email: person.email, password: person.password } })
          ).body.session.token
      }
      if (caller === 'ownerKey') call.apiKey = org.ownerKey.key
      if (caller === 'adminKey') call.apiKey = org.adminKey.key
      const res = await t.client.call(route.method, req.path, call)
      const expected = expectedStatus(route, caller)
      checked++
      if (res.status !== expected)
        failures.push(
          `${route.operationId} as ${caller}: expected ${expected}, got ${res.status} ${JSON.stringify(res.body)}`,
        )
    }
  }
  return { failures, missing, checked }
}
