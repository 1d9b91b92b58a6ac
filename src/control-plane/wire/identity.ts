/**
 * Wire schemas of identity: users, sessions, sign-up/in bodies, `/v1/me` and the caller's orgs.
 * @module
 */
import * as v from 'valibot'
import { OAUTH_SCOPES } from '../oauth/oauth-scopes.ts'
import { PERMISSIONS, ROLES } from '../policy.ts'
import { EmailField, idOf, itemOf, nameField, pageOf, Timestamp } from './common.ts'

/** A user. */
export const User = v.pipe(
  v.strictObject({ id: idOf('usr'), email: v.string(), name: v.string(), createdAt: Timestamp }),
  v.title('User'),
)

/** The password rule: long enough to resist guessing, bounded so hashing cannot be abused. */
export const PasswordField = v.pipe(
  v.string(),
  v.minLength(8, 'must be at least 8 characters'),
  v.maxLength(256, 'must be at most 256 characters'),
)

/** `POST /v1/auth/sign-up` body. */
export const SignUpBody = v.strictObject({
  email: EmailField,
  password: PasswordField,
  name: nameField(120),
  invitationToken: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(256))),
})

/** `POST /v1/auth/sign-in` body. */
export const SignInBody = v.strictObject({
  email: EmailField,
  password: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
})

/** Sign-up / sign-in response: the session token appears only here. */
export const SignedInResponse = v.pipe(
  v.strictObject({
    user: User,
    session: v.strictObject({ id: idOf('ses'), token: v.pipe(v.string(), v.startsWith('sst_')), expiresAt: Timestamp }),
  }),
  v.title('SignedIn'),
)

/** `GET /v1/me` response. */
export const MeResponse = v.pipe(
  v.strictObject({
    user: User,
    credential: v.variant('kind', [
      v.strictObject({ kind: v.literal('session'), sessionId: idOf('ses'), expiresAt: Timestamp }),
      v.strictObject({ kind: v.literal('apiKey'), apiKeyId: idOf('key') }),
      v.strictObject({
        kind: v.literal('oauth'),
        tokenId: idOf('ogr'),
        clientId: v.string(),
        scopes: v.array(v.picklist(OAUTH_SCOPES)),
        expiresAt: Timestamp,
      }),
    ]),
    organization: v.nullable(v.strictObject({ id: idOf('org'), name: v.string() })),
    member: v.nullable(
      v.strictObject({ id: idOf('mem'), role: v.picklist(ROLES), permissions: v.array(v.picklist(PERMISSIONS)) }),
    ),
  }),
  v.title('Me'),
)

/** One of the caller's organizations. */
export const MyOrganization = v.pipe(
  v.strictObject({
    id: idOf('org'),
    name: v.string(),
    memberId: idOf('mem'),
    role: v.picklist(ROLES),
    isActive: v.boolean(),
  }),
  v.title('MyOrganization'),
)

/** `GET /v1/me/orgs` response. */
export const MyOrganizationPage = pageOf(MyOrganization, 'MyOrganizationPage')

/** `POST /v1/me/active-org` body. */
export const ActiveOrgBody = v.strictObject({ organizationId: v.pipe(v.string(), v.maxLength(64)) })

/** `POST /v1/me/active-org` response. */
export const MyOrganizationItem = itemOf(MyOrganization, 'MyOrganizationItem')
