/**
 * Every error code the control plane answers with: the shared pipeline's, the OpenCode formats',
 * and its own, each with its status and meaning. `/openapi.json` lists them (`x-error-codes`), and
 * `tests/contract/error-catalogue.test.ts` fails when a source file can produce a code that is not here.
 * @module
 */
import { CORE_ERRORS } from '../core/core-errors.ts'
import { defineErrors, errorFactory } from '../core/error-catalogue.ts'
import { OPENCODE_ERRORS } from '../opencode/opencode-errors.ts'

/** The control plane's codes (shared ones included). */
export const CONTROL_PLANE_ERRORS = defineErrors({
  ...CORE_ERRORS,
  ...OPENCODE_ERRORS,

  // 400, 415 and 422: the request is malformed or not valid
  invalid_cursor: { status: 400, description: 'The cursor is not one this list issued; start again without one' },
  unsupported_media_type: {
    status: 415,
    description: 'The body needs another Content-Type (archives: application/zip)',
  },
  validation_failed: {
    status: 422,
    description: 'The body, query or source does not validate (details.issues; details.reason for sources)',
  },
  idempotency_key_invalid: {
    status: 400,
    description: 'The Idempotency-Key header is empty, over 255 characters, or not printable ASCII',
  },
  idempotency_key_reused: {
    status: 422,
    description:
      'This Idempotency-Key was already used for a different request (another method, target, organization or body); use a new key',
  },
  zip_duplicate_skill: { status: 422, description: 'The archive holds the same skill twice' },
  zip_skill_name_mismatch: { status: 422, description: "A skill's folder in the archive does not carry its name" },

  // 403: signed in but not allowed
  session_required: { status: 403, description: 'This action needs a signed-in session, not an API key' },
  no_organization: {
    status: 403,
    description: 'The account is in no organization; create one or accept an invitation',
  },
  sign_up_not_allowed: { status: 403, description: 'Sign-up needs a usable invitation token for this email' },
  invitation_email_mismatch: { status: 403, description: 'The invitation was sent to a different email address' },
  insufficient_scope: {
    status: 403,
    description: "The OAuth token's scopes do not cover this route (details.required, details.granted)",
  },
  credential_grant_required: {
    status: 403,
    description: 'Reading a provider key needs an explicit grant on the provider',
  },

  // 404: no such thing (or not visible to the caller)
  organization_not_found: { status: 404, description: 'No such organization among the caller’s' },
  member_not_found: { status: 404, description: 'No member with this id in the organization' },
  team_not_found: { status: 404, description: 'No team with this id in the organization' },
  invitation_not_found: { status: 404, description: 'No invitation with this id or token' },
  api_key_not_found: { status: 404, description: 'No API key with this id' },
  access_grant_not_found: { status: 404, description: 'No access grant with this id' },
  config_object_not_found: { status: 404, description: 'No config object with this id visible to the caller' },
  config_object_version_not_found: { status: 404, description: 'The config object has no version with this id' },
  skill_not_found: { status: 404, description: 'No skill with this id visible to the caller' },
  plugin_not_found: { status: 404, description: 'No plugin with this id visible to the caller' },
  plugin_membership_not_found: { status: 404, description: 'The config object is not in the plugin' },
  marketplace_not_found: { status: 404, description: 'No marketplace with this id visible to the caller' },
  marketplace_membership_not_found: { status: 404, description: 'The plugin is not in the marketplace' },
  skill_hub_not_found: { status: 404, description: 'No skill hub with this id visible to the caller' },
  skill_hub_assignment_not_found: { status: 404, description: 'No such assignment of the skill hub' },
  plugin_assignment_not_found: { status: 404, description: 'No such assignment of the plugin' },
  llm_provider_not_found: { status: 404, description: 'No model provider with this id visible to the caller' },
  catalog_provider_not_found: { status: 404, description: 'No such provider in the model catalog' },
  connector_instance_not_found: {
    status: 404,
    description: 'No connector instance with this id visible to the caller',
  },
  connector_account_not_found: { status: 404, description: 'No connector account with this id' },
  connector_target_not_found: { status: 404, description: 'No connector target with this id' },
  connector_mapping_not_found: { status: 404, description: 'No connector mapping with this id' },
  connector_discovery_not_found: { status: 404, description: 'No connector discovery with this id' },
  connector_sync_event_not_found: { status: 404, description: 'No sync event with this id' },
  job_not_found: { status: 404, description: 'No job with this id' },
  worker_not_found: { status: 404, description: 'No Worker with this id' },
  oauth_token_not_found: { status: 404, description: 'No OAuth token (grant) with this id visible to the caller' },
  oauth_authorization_not_found: {
    status: 404,
    description: 'No pending authorization request with this id (unknown, expired or already decided)',
  },
  oauth_device_request_not_found: {
    status: 404,
    description: 'No pending device sign-in with this user code (unknown, expired or already decided)',
  },

  // 409: the current state does not allow it
  idempotency_key_in_progress: {
    status: 409,
    description: 'A request with this Idempotency-Key is still running; retry after Retry-After to get its answer',
  },
  idempotency_answer_lost: {
    status: 409,
    description:
      'The request with this Idempotency-Key was carried out, but its answer could not be recorded (the server stopped or lost its database right after the commit, or the answer was over 4 MiB); do not retry: read the resource to see the result',
  },
  delivery_too_large: {
    status: 409,
    description:
      'What is delivered to the caller is over the delivery limits (items or bytes); deliver fewer hubs or plugins',
  },
  email_taken: { status: 409, description: 'An account with that email already exists' },
  member_exists: { status: 409, description: 'That email already belongs to a member' },
  already_owner: { status: 409, description: 'That member is already the owner' },
  owner_protected: { status: 409, description: "The owner's role cannot be changed" },
  invitation_not_pending: { status: 409, description: 'The invitation was already accepted, revoked or expired' },
  team_exists: { status: 409, description: 'A team with that name already exists' },
  already_in_team: { status: 409, description: 'The member is already in the team' },
  already_in_plugin: { status: 409, description: 'The config object is already in the plugin' },
  already_in_marketplace: { status: 409, description: 'The plugin is already in the marketplace' },
  already_in_hub: { status: 409, description: 'The skill is already in the hub' },
  already_assigned: { status: 409, description: 'The hub or plugin is already assigned to that principal' },
  skill_hub_exists: { status: 409, description: 'A skill hub with that name already exists' },
  skill_name_ambiguous: { status: 409, description: 'Several skills carry that name; add the version by id' },
  version_conflict: { status: 409, description: 'The base version is not the latest; re-read it and reapply' },
  config_object_deleted: { status: 409, description: 'The config object is deleted; restore it first' },
  config_object_not_active: { status: 409, description: 'The config object is not active, so it does not resolve' },
  invalid_lifecycle_transition: {
    status: 409,
    description: 'The config object cannot move to that state from its own',
  },
  llm_provider_exists: { status: 409, description: 'A model provider with that name already exists' },
  no_api_key: { status: 409, description: 'The provider has no API key stored' },
  connector_account_exists: { status: 409, description: 'An account of that type with that remote id exists' },
  connector_instance_exists: { status: 409, description: 'A connector instance with that name already exists' },
  connector_instance_disabled: { status: 409, description: 'The connector instance is disabled; enable it to sync' },
  connector_target_exists: { status: 409, description: 'The instance already has a target with that remote id' },
  connector_mapping_exists: { status: 409, description: 'The target already maps that selector to that type' },
  sync_in_progress: { status: 409, description: 'A sync of this target is already queued or running' },
  sync_not_retriable: { status: 409, description: 'Only failed or partial syncs can be retried' },
  job_not_retriable: { status: 409, description: 'Only failed or canceled jobs can be retried' },
  worker_not_running: { status: 409, description: 'The Worker is not running; its runtime should stop' },
  worker_runtime_elsewhere: {
    status: 409,
    description:
      "The Worker's runtime output is on another host (details.host, details.instanceId) or its provisioner is not configured here; ask a control-plane instance there",
  },

  // SCIM provisioning (`/scim/v2`): answered in SCIM's error format, `scimType` in the body
  scim_invalid_filter: {
    status: 400,
    description: 'SCIM: the filter is not one this service supports (scimType invalidFilter)',
  },
  scim_invalid_syntax: {
    status: 400,
    description: 'SCIM: the body is not valid JSON or not a SCIM request (scimType invalidSyntax)',
  },
  scim_invalid_value: {
    status: 400,
    description: 'SCIM: an attribute has a missing or invalid value (scimType invalidValue)',
  },
  scim_invalid_path: {
    status: 400,
    description: 'SCIM: a PATCH path is not one this service supports (scimType invalidPath)',
  },
  scim_no_target: { status: 400, description: 'SCIM: a PATCH path names nothing to change (scimType noTarget)' },
  scim_mutability: { status: 400, description: 'SCIM: the attribute cannot be changed (scimType mutability)' },
  scim_too_many: {
    status: 400,
    description: 'SCIM: the request names more than this service answers at once (scimType tooMany)',
  },
  scim_uniqueness: {
    status: 409,
    description: 'SCIM: userName, externalId or displayName is taken (scimType uniqueness)',
  },
  scim_not_found: { status: 404, description: 'SCIM: no such User or Group in the organization' },
  scim_precondition_failed: { status: 412, description: 'SCIM: If-Match does not name the current version' },
  scim_payload_too_large: { status: 413, description: 'SCIM: the body is over the limit of the SCIM endpoints' },
  scim_unsupported_media_type: { status: 415, description: 'SCIM: send application/scim+json or application/json' },
  scim_token_not_found: { status: 404, description: 'No SCIM token with this id in the organization' },
  scim_token_limit: {
    status: 409,
    description: 'The organization holds the most SCIM tokens it may; revoke one first',
  },
  engine_unreachable: {
    status: 503,
    description:
      "The Worker's container engine does not answer; the change is kept and its old runtime is stopped once it does",
  },

  // Single sign-on and the admission policy (issue 33 §1, §2)
  sso_required: {
    status: 403,
    description:
      'The organization requires signing in with its identity provider (admission rule requireSso); sign in with SSO',
  },
  admission_refused: {
    status: 403,
    description:
      "The organization's admission policy refuses this way in or email domain (details.reason, details.way)",
  },
  sso_domain_not_allowed: {
    status: 403,
    description: "The provider's email is missing, unverified or not in a domain the connection admits",
  },
  sso_provider_denied: { status: 403, description: 'The identity provider answered the sign-in with an error' },
  sso_id_token_invalid: {
    status: 401,
    description: 'The ID token failed verification (signature, issuer, audience, expiry or nonce; details.reason)',
  },
  sso_state_invalid: {
    status: 400,
    description: 'The sign-in state is missing, unknown, used or expired; start again',
  },
  sso_handoff_invalid: { status: 400, description: 'The sign-in hand-off code is unknown, used or expired' },
  sso_not_configured: { status: 404, description: 'The organization has no single sign-on connection' },
  sso_connection_not_found: { status: 404, description: 'No single sign-on connection has that slug' },
  sso_slug_taken: { status: 409, description: 'Another organization uses that slug for its sign-in URLs' },
  sso_domain_taken: { status: 409, description: "Another organization's connection already claims that email domain" },
  sso_connection_in_use: {
    status: 409,
    description:
      'Members must sign in with SSO: the connection cannot be removed or change issuer until the rule is off',
  },
  sso_identity_conflict: { status: 409, description: 'That provider account is linked to another account' },
  sso_account_exists: {
    status: 409,
    description: 'An account with that email exists; its owner links it to the provider from a signed-in session',
  },
  sso_not_proven: {
    status: 409,
    description: 'Requiring SSO needs a connection and a session that connection signed in (lock-out guard)',
  },
  admission_policy_conflict: {
    status: 409,
    description: 'The admission policy changed since it was read (expectedVersion); read it again and reapply',
  },
  sso_busy: { status: 429, description: 'Too many sign-ins are in progress for the organization; try again shortly' },
  sso_provider_error: {
    status: 502,
    description: 'The identity provider could not be reached or answered wrongly (discovery, JWKS or token endpoint)',
  },
})

/** A control-plane error code. */
export type ControlPlaneErrorCode = keyof typeof CONTROL_PLANE_ERRORS

/** Makes an error with one of the {@link CONTROL_PLANE_ERRORS} codes and its catalogued status. */
export const controlPlaneError = errorFactory(CONTROL_PLANE_ERRORS)
