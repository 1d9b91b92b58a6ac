/**
 * An organization's admission policy (issue 33 §2): which ways in are open (invitation, SSO
 * just-in-time, SCIM), which email domains may join, and whether members must sign in through the
 * organization's identity provider. Read by every path that creates a membership (invitation
 * acceptance, SSO just-in-time, SCIM provisioning) through {@link readAdmissionPolicy} and
 * {@link admits}. No stored row means the defaults: every way open, any domain, no SSO rule.
 * @module
 */
import type { Db } from '../schema.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A way a person becomes a member. */
export const WAYS_IN = ['invitation', 'ssoJustInTime', 'scim'] as const
/** A way in. */
export type WayIn = (typeof WAYS_IN)[number]

/** Most domains an allowlist may hold. */
export const MAX_ALLOWED_DOMAINS = 100

/** An organization's admission policy as read. */
export interface AdmissionPolicy {
  orgId: string
  /** 0 while the defaults apply (no write yet); each write adds one. */
  version: number
  waysIn: Record<WayIn, boolean>
  /** Lower-case domains; empty: any domain. */
  allowedDomains: string[]
  requireSso: boolean
  updatedAt: string | null
}

/** Why a person is not admitted. */
export type AdmissionRefusal = 'way_disabled' | 'domain_not_allowed'

/** The policy that applies when an organization never wrote one. */
export function defaultAdmissionPolicy(orgId: string): AdmissionPolicy {
  return {
    orgId,
    version: 0,
    waysIn: { invitation: true, ssoJustInTime: true, scim: true },
    allowedDomains: [],
    requireSso: false,
    updatedAt: null,
  }
}

/** Reads an organization's policy (the defaults when none is stored); works inside a transaction. */
export async function readAdmissionPolicy(db: Db, orgId: string): Promise<AdmissionPolicy> {
  const row = await db.selectFrom('org_admission_policy').selectAll().where('org_id', '=', orgId).executeTakeFirst()
  if (!row) return defaultAdmissionPolicy(orgId)
  return {
    orgId,
    version: Number(row.version),
    waysIn: {
      invitation: Number(row.allow_invitation) === 1,
      ssoJustInTime: Number(row.allow_sso_jit) === 1,
      scim: Number(row.allow_scim) === 1,
    },
    allowedDomains: JSON.parse(row.allowed_domains) as string[],
    requireSso: Number(row.require_sso) === 1,
    updatedAt: row.updated_at,
  }
}

/** The domain part of an email, lower-cased; '' when there is none. */
export function emailDomain(email: string): string {
  const at = email.lastIndexOf('@')
  return at < 0
    ? ''
    : email
        .slice(at + 1)
        .trim()
        .toLowerCase()
}

/** Why the policy refuses `email` coming in by `way`, or null when it admits it. Pure. */
export function admissionRefusal(policy: AdmissionPolicy, way: WayIn, email: string): AdmissionRefusal | null {
  if (!policy.waysIn[way]) return 'way_disabled'
  if (policy.allowedDomains.length > 0 && !policy.allowedDomains.includes(emailDomain(email)))
    return 'domain_not_allowed'
  return null
}

/** True when the policy admits `email` coming in by `way`. Pure. */
export function admits(policy: AdmissionPolicy, way: WayIn, email: string): boolean {
  return admissionRefusal(policy, way, email) === null
}

/** Throws 403 `admission_refused` (with `details.reason` and `details.way`) unless the policy admits. */
export function assertAdmitted(policy: AdmissionPolicy, way: WayIn, email: string): void {
  const reason = admissionRefusal(policy, way, email)
  if (reason)
    throw controlPlaneError(
      'admission_refused',
      reason === 'way_disabled'
        ? `The organization does not admit members by ${way}`
        : "The organization's admission policy does not allow this email domain",
      { details: { reason, way } },
    )
}

/** The 403 for a session that the organization's provider did not sign in, where it requires one. */
export function ssoRequiredError(orgId: string) {
  return controlPlaneError(
    'sso_required',
    'This organization requires signing in with its identity provider; sign in with SSO',
    { details: { rule: 'requireSso', orgId } },
  )
}

/**
 * Throws 403 `sso_required` when `orgId` requires SSO and the session was not signed in by its
 * provider. For session routes that act in an organization named in the body (approving a device
 * or an MCP client), which the authenticator's per-organization check does not see.
 */
export async function assertSessionMayAct(db: Db, orgId: string | null, sessionSsoOrgId: string | null): Promise<void> {
  if (orgId === null || orgId === sessionSsoOrgId) return
  if ((await readAdmissionPolicy(db, orgId)).requireSso) throw ssoRequiredError(orgId)
}
