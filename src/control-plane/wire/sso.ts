/**
 * Wire schemas of single sign-on (`/v1/org/sso`, `/v1/sso/*`) and the admission policy
 * (`/v1/org/admission-policy`).
 * @module
 */
import * as v from 'valibot'
import { ASSIGNABLE_ROLES } from '../policy.ts'
import { EmailField, idOf, itemOf, nameField, Timestamp } from './common.ts'

/** A DNS name as an email domain: lower-case labels, at least one dot, at most 253 characters. */
export const DomainField = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.maxLength(253),
  v.regex(
    /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
    'must be a domain name like example.com',
  ),
)

const Domains = (min: number) =>
  v.pipe(
    v.array(DomainField),
    v.minLength(min, min === 1 ? 'must name at least one domain' : 'too few'),
    v.maxLength(100, 'at most 100 domains'),
    v.check((list) => new Set(list).size === list.length, 'must not repeat a domain'),
  )

/** A connection's slug: part of its sign-in URLs. */
export const SsoSlug = v.pipe(
  v.string(),
  v.trim(),
  v.minLength(2),
  v.maxLength(48),
  v.regex(/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/, 'must be lower-case letters, digits and dashes'),
)

/** `PUT /v1/org/sso` body. */
export const PutSsoConnectionBody = v.strictObject({
  slug: SsoSlug,
  displayName: nameField(80),
  issuer: v.pipe(v.string(), v.trim(), v.maxLength(512), v.url('must be a URL')),
  clientId: v.pipe(v.string(), v.minLength(1), v.maxLength(512)),
  clientSecret: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(1024))),
  allowedDomains: Domains(1),
  defaultRole: v.optional(v.picklist(ASSIGNABLE_ROLES), 'member'),
  defaultTeamId: v.optional(v.nullable(idOf('team')), null),
})

/** An organization's connection as read (the client secret never appears). */
export const SsoConnection = v.pipe(
  v.strictObject({
    slug: v.string(),
    displayName: v.string(),
    issuer: v.string(),
    clientId: v.string(),
    hasClientSecret: v.boolean(),
    allowedDomains: v.array(v.string()),
    defaultRole: v.picklist(ASSIGNABLE_ROLES),
    defaultTeamId: v.nullable(v.string()),
    redirectUri: v.pipe(v.string(), v.description('Register this exact URI with the provider')),
    startUrl: v.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('SsoConnection'),
)
/** `{item}` of a connection. */
export const SsoConnectionItem = itemOf(SsoConnection, 'SsoConnectionItem')

/** `GET /v1/sso/resolve` query. */
export const ResolveQuery = v.object({ email: EmailField })

/** Which sign-in applies to an email. */
export const SsoResolution = v.pipe(
  v.variant('method', [
    v.strictObject({ method: v.literal('password'), requireSso: v.literal(false) }),
    v.strictObject({
      method: v.literal('sso'),
      provider: v.pipe(v.string(), v.description("The connection's display name, for a 'Sign in with …' button")),
      startUrl: v.pipe(v.string(), v.description('Absolute URL that starts the sign-in (same as `signInUrl`)')),
      passwordAllowed: v.pipe(v.boolean(), v.description('False when the organization requires SSO')),
      requireSso: v.pipe(v.boolean(), v.description('True when the organization requires SSO (reference field name)')),
      organizationSlug: v.pipe(v.string(), v.description('The slug in `/v1/sso/:orgSlug/…`')),
      signInPath: v.pipe(v.string(), v.description('`/v1/sso/<slug>/start`, relative to this server')),
      signInUrl: v.pipe(v.string(), v.description('Absolute URL that starts the sign-in')),
    }),
  ]),
  v.title('SsoResolution'),
)

/** `GET /v1/sso/:orgSlug/start` query. */
export const StartQuery = v.object({
  returnTo: v.optional(v.pipe(v.string(), v.maxLength(512))),
})

/** `GET /v1/sso/:orgSlug/callback` query (as the provider sends it). */
export const CallbackQuery = v.object({
  state: v.optional(v.pipe(v.string(), v.maxLength(512))),
  code: v.optional(v.pipe(v.string(), v.maxLength(4096))),
  error: v.optional(v.pipe(v.string(), v.maxLength(256))),
  error_description: v.optional(v.pipe(v.string(), v.maxLength(1024))),
  iss: v.optional(v.pipe(v.string(), v.maxLength(512))),
})

/** `POST /v1/sso/session` body: the one-time hand-off code from the callback's redirect. */
export const SsoSessionBody = v.strictObject({ handoff: v.pipe(v.string(), v.minLength(1), v.maxLength(128)) })

/** `POST /v1/org/sso/link` response: where to send the browser to link the caller's account. */
export const SsoLinkResponse = v.pipe(v.strictObject({ url: v.string() }), v.title('SsoLinkStart'))

/** `PUT /v1/org/admission-policy` body. */
export const PutAdmissionPolicyBody = v.strictObject({
  expectedVersion: v.pipe(v.number(), v.integer(), v.minValue(0)),
  waysIn: v.strictObject({ invitation: v.boolean(), ssoJustInTime: v.boolean(), scim: v.boolean() }),
  allowedDomains: Domains(0),
  requireSso: v.boolean(),
})

/** An admission policy as read. */
export const AdmissionPolicyView = v.pipe(
  v.strictObject({
    version: v.pipe(v.number(), v.integer()),
    waysIn: v.strictObject({ invitation: v.boolean(), ssoJustInTime: v.boolean(), scim: v.boolean() }),
    allowedDomains: v.array(v.string()),
    requireSso: v.boolean(),
    updatedAt: v.nullable(Timestamp),
  }),
  v.title('AdmissionPolicy'),
)
/** `{item}` of a policy. */
export const AdmissionPolicyItem = itemOf(AdmissionPolicyView, 'AdmissionPolicyItem')
