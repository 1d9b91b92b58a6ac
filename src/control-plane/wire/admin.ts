/**
 * Wire schemas of organization administration: organizations, members, invitations, teams,
 * roles, API keys and audit events.
 * @module
 */
import * as v from 'valibot'
import { INVITATION_STATES } from '../admin/invitations.ts'
import { ASSIGNABLE_ROLES, PERMISSIONS, ROLES } from '../policy.ts'
import { EmailField, idOf, itemOf, nameField, pageOf, Timestamp } from './common.ts'

/** An organization. */
export const Organization = v.pipe(
  v.strictObject({ id: idOf('org'), name: v.string(), createdAt: Timestamp, updatedAt: Timestamp }),
  v.title('Organization'),
)
/** `{item: Organization}`. */
export const OrganizationItem = itemOf(Organization, 'OrganizationItem')
/** `POST /v1/orgs` body. */
export const CreateOrganizationBody = v.strictObject({ name: nameField(120) })
/** `PATCH /v1/org` body: at least one field. */
export const UpdateOrganizationBody = v.pipe(
  v.strictObject({ name: v.optional(nameField(120)) }),
  v.check((body) => Object.keys(body).length > 0, 'give at least one field to change'),
)

/** A member. */
export const Member = v.pipe(
  v.strictObject({
    id: idOf('mem'),
    userId: idOf('usr'),
    email: v.string(),
    name: v.string(),
    role: v.picklist(ROLES),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('Member'),
)
/** A page of members. */
export const MemberPage = pageOf(Member, 'MemberPage')
/** `{item: Member}`. */
export const MemberItem = itemOf(Member, 'MemberItem')
/** Role change body. */
export const ChangeRoleBody = v.strictObject({ role: v.picklist(ASSIGNABLE_ROLES, 'must be admin or member') })

/** An invitation (never its token). */
export const Invitation = v.pipe(
  v.strictObject({
    id: idOf('inv'),
    email: v.string(),
    role: v.picklist(ROLES),
    status: v.picklist(INVITATION_STATES),
    invitedByMemberId: v.nullable(idOf('mem')),
    acceptedByUserId: v.nullable(idOf('usr')),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    closedAt: v.nullable(Timestamp),
  }),
  v.title('Invitation'),
)
/** A page of invitations. */
export const InvitationPage = pageOf(Invitation, 'InvitationPage')
/** `{item: Invitation}`. */
export const InvitationItem = itemOf(Invitation, 'InvitationItem')
/** Invitation create body. */
export const CreateInvitationBody = v.strictObject({
  email: EmailField,
  role: v.optional(v.picklist(ASSIGNABLE_ROLES, 'must be admin or member'), 'member'),
})
/** Invitation create response: the token is shown only here. */
export const CreatedInvitation = v.pipe(
  v.strictObject({ item: Invitation, token: v.pipe(v.string(), v.startsWith('svi_')) }),
  v.title('CreatedInvitation'),
)
/** Accept body. */
export const AcceptInvitationBody = v.strictObject({ token: v.pipe(v.string(), v.minLength(1), v.maxLength(256)) })
/** Accept response. */
export const AcceptedInvitation = v.pipe(
  v.strictObject({
    item: v.strictObject({
      organization: v.strictObject({ id: idOf('org'), name: v.string() }),
      memberId: idOf('mem'),
      role: v.picklist(ROLES),
    }),
  }),
  v.title('AcceptedInvitation'),
)

/** A team. */
export const Team = v.pipe(
  v.strictObject({
    id: idOf('team'),
    name: v.string(),
    description: v.nullable(v.string()),
    memberCount: v.number(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('Team'),
)
/** A page of teams. */
export const TeamPage = pageOf(Team, 'TeamPage')
/** `{item: Team}`. */
export const TeamItem = itemOf(Team, 'TeamItem')
const Description = v.nullable(v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters')))
/** Team create body. */
export const CreateTeamBody = v.strictObject({
  name: nameField(120),
  description: v.optional(Description),
  memberIds: v.optional(v.pipe(v.array(idOf('mem')), v.maxLength(500))),
})
/** Team update body. */
export const UpdateTeamBody = v.pipe(
  v.strictObject({ name: v.optional(nameField(120)), description: v.optional(Description) }),
  v.check((body) => Object.keys(body).length > 0, 'give at least one field to change'),
)
/** Add-to-team body. */
export const AddTeamMemberBody = v.strictObject({ memberId: idOf('mem') })

/** A role and what it may do. */
export const RoleDescription = v.pipe(
  v.strictObject({
    id: v.picklist(ROLES),
    description: v.string(),
    assignable: v.boolean(),
    permissions: v.array(v.picklist(PERMISSIONS)),
    apiKeyPermissions: v.array(v.picklist(PERMISSIONS)),
  }),
  v.title('Role'),
)
/** `GET /v1/roles`. */
export const RolePage = pageOf(RoleDescription, 'RolePage')

/** An API key (never the key). */
export const ApiKey = v.pipe(
  v.strictObject({
    id: idOf('key'),
    name: v.string(),
    start: v.pipe(v.string(), v.description('First characters of the key, to recognise it')),
    memberId: idOf('mem'),
    userId: idOf('usr'),
    role: v.picklist(ROLES),
    status: v.picklist(['active', 'expired', 'disabled']),
    disabledReason: v.nullable(v.picklist(['role_changed', 'member_removed', 'sso_required'])),
    createdAt: Timestamp,
    expiresAt: v.nullable(Timestamp),
    lastUsedAt: v.nullable(Timestamp),
  }),
  v.title('ApiKey'),
)
/** A page of API keys. */
export const ApiKeyPage = pageOf(ApiKey, 'ApiKeyPage')
/** Create body. */
export const CreateApiKeyBody = v.strictObject({
  name: nameField(64),
  expiresAt: v.optional(
    v.pipe(v.string(), v.isoTimestamp('must be an ISO-8601 timestamp like 2030-01-01T00:00:00.000Z')),
  ),
})
/** Create response: the key is shown only here. */
export const CreatedApiKey = v.pipe(
  v.strictObject({ item: ApiKey, key: v.pipe(v.string(), v.startsWith('svc_')) }),
  v.title('CreatedApiKey'),
)

/** An audit event. */
export const AuditEvent = v.pipe(
  v.strictObject({
    id: idOf('aev'),
    action: v.pipe(
      v.string(),
      v.description(
        "The handler's named action (`team.created`) or, for a request without one and for every refusal or failure, the route's operationId (`createTeam`)",
      ),
    ),
    actor: v.strictObject({
      userId: v.nullable(idOf('usr')),
      memberId: v.nullable(idOf('mem')),
      credential: v.pipe(
        v.picklist(['session', 'apiKey', 'oauth', 'worker', 'scim', 'anonymous']),
        v.description('The credential the request proved; `anonymous` on public routes (sign-in, OAuth endpoints)'),
      ),
      apiKeyId: v.nullable(idOf('key')),
    }),
    origin: v.pipe(
      v.picklist(['api', 'console', 'mcp', 'scim', 'sso']),
      v.description(
        'Where the request came from: the HTTP API, the web console, the MCP endpoint, SCIM provisioning or single sign-on',
      ),
    ),
    target: v.strictObject({ type: v.string(), id: v.string() }),
    outcome: v.pipe(
      v.picklist(['success', 'denied', 'failed']),
      v.description('`denied`: refused with 401 or 403; `failed`: any other error (see `errorCode`)'),
    ),
    errorCode: v.pipe(
      v.nullable(v.string()),
      v.description("The error's stable code when the request did not succeed"),
    ),
    requestId: v.pipe(v.nullable(v.string()), v.description('The X-Request-Id of the request')),
    route: v.pipe(
      v.nullable(v.string()),
      v.description(
        'The declared route, `METHOD /path/:param` (never the query string); null for events before this field',
      ),
    ),
    data: v.nullable(v.record(v.string(), v.union([v.string(), v.number(), v.boolean(), v.null()]))),
    createdAt: Timestamp,
  }),
  v.title('AuditEvent'),
)
/** A page of audit events. */
export const AuditEventPage = pageOf(AuditEvent, 'AuditEventPage')
