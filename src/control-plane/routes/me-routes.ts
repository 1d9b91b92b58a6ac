/**
 * `/v1/me*`, organization creation and invitation acceptance: routes about the caller rather than
 * one organization's administration.
 * @module
 */
import * as v from 'valibot'
import { createOrganization, listMyOrganizations, membershipOf } from '../admin/organizations.ts'
import { acceptInvitation } from '../identity/accounts.ts'
import { setActiveOrg } from '../identity/sessions.ts'
import { permissionsOf, rules } from '../policy.ts'
import { pageQuery } from '../pagination.ts'
import { AcceptedInvitation, AcceptInvitationBody, CreateOrganizationBody, OrganizationItem } from '../wire/admin.ts'
import { ActiveOrgBody, MeResponse, MyOrganizationItem, MyOrganizationPage } from '../wire/identity.ts'
import { route, type RouteContext } from './route.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** The credential part of `GET /v1/me`. */
function credentialView(principal: ControlPlanePrincipal) {
  if (principal.oauth)
    return {
      kind: 'oauth' as const,
      tokenId: principal.oauth.tokenId,
      clientId: principal.oauth.clientId,
      scopes: [...principal.oauth.scopes],
      expiresAt: principal.oauth.expiresAt,
    }
  if (principal.credential === 'apiKey') return { kind: 'apiKey' as const, apiKeyId: principal.apiKeyId! }
  return { kind: 'session' as const, sessionId: principal.session!.id, expiresAt: principal.session!.expiresAt }
}

/** Routes about the caller. */
export function meRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/me',
      operationId: 'getMe',
      tags: ['identity'],
      summary: 'Who the caller is, and the organization and role they act with',
      description: 'Also answers an OAuth token of any scope; `member.permissions` are then the ones its scopes leave.',
      auth: rules.identityAnyScope,
      responses: { 200: MeResponse },
      handler: ({ principal }) => ({
        user: principal.user!,
        credential: credentialView(principal),
        organization: principal.org ? { id: principal.org.id, name: principal.org.name } : null,
        member: principal.org
          ? {
              id: principal.org.memberId,
              role: principal.org.role,
              permissions: permissionsOf(
                principal.org.role,
                principal.credential === 'none' || principal.credential === 'worker' || principal.credential === 'scim'
                  ? 'session'
                  : principal.credential,
                principal.oauth?.scopes,
              ),
            }
          : null,
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/me/orgs',
      operationId: 'listMyOrganizations',
      tags: ['identity'],
      summary: "The caller's organizations (an API key or OAuth token sees only its own)",
      auth: rules.identityAnyScope,
      query: v.object(pageQuery()),
      responses: { 200: MyOrganizationPage },
      errors: [400],
      handler: ({ principal, query }) =>
        listMyOrganizations(ctx.deps, principal.user!.id, principal.session?.activeOrgId ?? principal.org?.id ?? null, {
          cursor: query.cursor,
          limit: query.limit,
          onlyOrgId:
            principal.credential === 'apiKey' || principal.credential === 'oauth' ? principal.org!.id : undefined,
        }),
    }),
    route({
      method: 'POST',
      path: '/v1/me/active-org',
      operationId: 'setActiveOrganization',
      tags: ['identity'],
      summary: 'Choose the organization this session acts in by default',
      description: 'Session only. 404 for an organization the caller does not belong to.',
      auth: rules.session,
      body: ActiveOrgBody,
      responses: { 200: MyOrganizationItem },
      handler: async ({ principal, body }) => {
        const member = await membershipOf(ctx.deps, principal.user!.id, body.organizationId)
        if (!member) throw controlPlaneError('organization_not_found', 'Organization not found')
        await setActiveOrg(ctx.deps.db, principal.session!.id, member.orgId)
        return {
          item: {
            id: member.orgId,
            name: member.orgName,
            memberId: member.memberId,
            role: member.role,
            isActive: true,
          },
        }
      },
    }),
    route({
      method: 'POST',
      path: '/v1/orgs',
      operationId: 'createOrganization',
      tags: ['organization'],
      summary: 'Create an organization; the caller becomes its owner',
      description: "Session only. The new organization becomes the session's active one.",
      auth: rules.session,
      body: CreateOrganizationBody,
      responses: { 201: OrganizationItem },
      handler: async ({ principal, body }) => {
        const created = await createOrganization(ctx.deps, principal.user!.id, body)
        await setActiveOrg(ctx.deps.db, principal.session!.id, created.organization.id)
        return { item: created.organization }
      },
    }),
    route({
      method: 'POST',
      path: '/v1/invitations/accept',
      operationId: 'acceptInvitation',
      tags: ['invitations'],
      summary: 'Join an organization with an invitation token',
      description:
        "Session only; the invitation must be for the signed-in email (403 `invitation_email_mismatch`). 404 unknown token; 409 `invitation_not_pending` (accepted, canceled or expired) or `member_exists`. The organization becomes the session's active one.",
      auth: rules.session,
      body: AcceptInvitationBody,
      responses: { 200: AcceptedInvitation },
      errors: [409],
      handler: async ({ principal, body }) => {
        const session = {
          id: principal.session!.id,
          activeOrgId: principal.session!.activeOrgId,
          expiresAt: principal.session!.expiresAt,
          user: principal.user!,
        }
        return { item: await acceptInvitation(ctx.deps, session, body.token) }
      },
    }),
  ]
}
