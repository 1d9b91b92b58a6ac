/**
 * `/v1/invitations`: create (token shown once), list, read, cancel. Acceptance is in me-routes.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import {
  cancelInvitation,
  createInvitation,
  getInvitation,
  INVITATION_STATES,
  listInvitations,
} from '../admin/invitations.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { CreatedInvitation, CreateInvitationBody, InvitationItem, InvitationPage } from '../wire/admin.ts'
import { idParams } from '../wire/common.ts'
import { route, type RouteContext } from './route.ts'

const InvitationParams = idParams(['invitationId', 'inv'])

/** Invitation routes. */
export function invitationRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/invitations',
      operationId: 'listInvitations',
      tags: ['invitations'],
      summary: 'Invitations of the current organization, oldest first',
      auth: rules.org('invitations.read'),
      query: v.object({ ...pageQuery(), status: v.optional(v.picklist(INVITATION_STATES)) }),
      responses: { 200: InvitationPage },
      errors: [400],
      handler: ({ principal, query }) => listInvitations(ctx.deps, principal.org!.id, query),
    }),
    route({
      method: 'POST',
      path: '/v1/invitations',
      operationId: 'createInvitation',
      tags: ['invitations'],
      summary: 'Invite an email with a role; returns a one-time token to pass on',
      description:
        'The token is in this response only and expires after 7 days. A pending invitation for the same email is replaced (its token stops working). 409 `member_exists`; 403 `admission_refused` when the admission policy closes invitations or the email’s domain.',
      auth: rules.org('invitations.manage'),
      body: CreateInvitationBody,
      responses: { 201: CreatedInvitation },
      errors: [409],
      handler: ({ principal, body }) => createInvitation(ctx.deps, actorOf(principal), body),
    }),
    route({
      method: 'GET',
      path: '/v1/invitations/:invitationId',
      operationId: 'getInvitation',
      tags: ['invitations'],
      summary: 'One invitation',
      auth: rules.org('invitations.read'),
      params: InvitationParams,
      responses: { 200: InvitationItem },
      handler: async ({ principal, params }) => ({
        item: await getInvitation(ctx.deps, principal.org!.id, params.invitationId),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/invitations/:invitationId/cancel',
      operationId: 'cancelInvitation',
      tags: ['invitations'],
      summary: 'Cancel a pending invitation',
      description: '409 `invitation_not_pending` when it is accepted, canceled or expired.',
      auth: rules.org('invitations.manage'),
      params: InvitationParams,
      responses: { 200: InvitationItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await cancelInvitation(ctx.deps, actorOf(principal), params.invitationId),
      }),
    }),
  ]
}
