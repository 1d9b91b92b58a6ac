/**
 * Every error code the workspace server answers with: the shared pipeline's, the OpenCode formats',
 * and its own, each with its status and meaning. `/openapi.json` lists them (`x-error-codes`), and
 * `tests/contract/error-catalogue.test.ts` fails when a source file can produce a code that is not here.
 * @module
 */
import { CORE_ERRORS } from '../core/core-errors.ts'
import { defineErrors, errorFactory } from '../core/error-catalogue.ts'
import { OPENCODE_ERRORS } from '../opencode/opencode-errors.ts'

/** The workspace server's codes (shared ones included). */
export const WORKSPACE_ERRORS = defineErrors({
  ...CORE_ERRORS,
  ...OPENCODE_ERRORS,
  // Shared codes this surface also answers with a second status; clients rely on both.
  invalid_json: {
    ...CORE_ERRORS.invalid_json,
    otherStatuses: [422],
    description: 'The request body is not valid JSON (400), or the workspace config file is not a JSON object (422)',
  },
  invalid_path: {
    ...CORE_ERRORS.invalid_path,
    otherStatuses: [409],
    description:
      'A path is not allowed or resolves outside the workspace (400), or an inbox upload targets a directory (409)',
  },

  // 400: the request is malformed
  invalid_payload: { status: 400, description: 'The request body does not match the route schema (details.issues)' },
  invalid_query: { status: 400, description: 'The query string does not match the route schema (details.issues)' },
  invalid_scope: { status: 400, description: 'A token scope is not owner, collaborator or viewer' },
  invalid_skill_name: { status: 400, description: 'A skill name breaks the OpenCode naming rule' },
  invalid_skill_content: { status: 400, description: 'A skill body is empty or its frontmatter is not valid' },
  invalid_command: { status: 400, description: 'A command file frontmatter is not valid YAML' },
  invalid_command_name: { status: 400, description: 'A command name breaks the naming rule' },
  invalid_command_template: { status: 400, description: 'A command template is empty' },
  invalid_mcp_name: { status: 400, description: 'An MCP server name breaks the naming rule' },
  invalid_mcp_config: { status: 400, description: 'An MCP server entry is not a valid OpenCode MCP config' },
  invalid_plugin_spec: { status: 400, description: 'A plugin spec is empty, multi-line or too long' },
  invalid_portable_file_path: { status: 400, description: 'A file path in an export or import is not portable' },
  invalid_workspace_import_payload: { status: 400, description: 'An import bundle is not valid or cannot be applied' },
  invalid_workspace_import_preview_fingerprint: { status: 400, description: 'previewFingerprint is not a string' },
  invalid_workspace_export_sensitive_mode: { status: 400, description: 'sensitive is not auto, include or exclude' },
  invalid_inbox_item: { status: 400, description: 'An inbox item id is not valid' },
  invalid_artifact: { status: 400, description: 'An outbox artifact id is not valid' },
  invalid_control_plane_url: {
    status: 400,
    description: 'controlPlaneUrl is not an http(s) URL without credentials, query or fragment',
  },
  file_required: { status: 400, description: 'A multipart upload has no "file" field' },
  not_a_file: { status: 400, description: 'The path exists and is not a regular file' },
  invalid_sidecar_path: { status: 400, description: 'A sidecar path is ambiguous once decoded' },
  sidecar_unconfigured: { status: 400, description: 'The workspace has no sidecar configured' },
  websocket_upgrade_failed: { status: 400, description: 'The WebSocket upgrade could not be completed' },

  // 401 and 403: who may do what
  sidecar_ticket_invalid: { status: 401, description: 'A WebSocket ticket is unknown, already used or expired' },
  read_only: { status: 403, description: 'The server runs read-only; nothing may change' },
  write_denied: { status: 403, description: 'The host denied (or did not answer) the approval for this write' },
  export_denied: { status: 403, description: 'The host did not approve exporting MCP secrets' },
  mcp_secrets_host_only: { status: 403, description: 'Only the host or an owner token may export MCP secrets' },
  file_session_read_only: { status: 403, description: 'The file session was opened read-only' },
  workspace_permission_denied: { status: 403, description: 'The operating system refuses to read a directory' },
  sidecar_route_not_allowed: {
    status: 403,
    description: 'The sidecar route is not on the allow-list; only the host may call it',
  },

  // 404: no such thing
  workspace_not_found: { status: 404, description: 'No workspace with this id' },
  approval_not_found: { status: 404, description: 'No pending approval with this id (or already decided)' },
  token_not_found: { status: 404, description: 'No token with this id' },
  skill_not_found: { status: 404, description: 'No skill with this name' },
  skill_file_not_found: { status: 404, description: 'The skill has no file at this path' },
  command_not_found: { status: 404, description: 'No command with this name' },
  mcp_not_found: { status: 404, description: 'No MCP server with this name' },
  plugin_not_found: { status: 404, description: 'No plugin with this spec' },
  file_not_found: { status: 404, description: 'No file or folder at this path' },
  file_session_not_found: { status: 404, description: 'No open file session with this id (closed or expired)' },
  inbox_disabled: { status: 404, description: 'The inbox is disabled on this server' },
  inbox_item_not_found: { status: 404, description: 'No inbox item with this id' },
  outbox_disabled: { status: 404, description: 'The outbox is disabled on this server' },
  artifact_not_found: { status: 404, description: 'No outbox artifact with this id' },
  session_not_found: { status: 404, description: 'No sidecar session with this id in this workspace' },
  org_not_linked: {
    status: 404,
    description:
      'The workspace is not linked to an organization (details.lastAttempt: why the last link attempt failed)',
  },
  org_conflict_not_found: { status: 404, description: 'No open organization conflict at this path' },
  sidecar_socket_refused: {
    status: 502,
    otherStatuses: [404],
    description: 'The sidecar refused a relayed WebSocket (404 when it has no such socket route)',
  },

  // 409: the state does not allow it
  inbox_target_not_regular: { status: 409, description: 'An inbox upload targets a symlink or special file' },
  workspace_export_requires_decision: {
    status: 409,
    description: 'The export holds secrets; choose sensitive=include or sensitive=exclude',
  },
  import_target_conflict: {
    status: 409,
    description:
      'An import target changed kind since the preview (a file where a folder must be, or the reverse); rolled back',
  },
  workspace_import_preview_required: { status: 409, description: 'Preview the import and pass its fingerprint' },
  org_already_linked: { status: 409, description: 'The workspace is already linked; unlink it first' },
  org_link_managed: {
    status: 409,
    description: "A Worker's organization link is set by the control plane that runs it",
  },
  workspace_import_preview_stale: {
    status: 409,
    description: 'The workspace changed since the preview; the body holds the new preview',
  },

  // 413 and 416: sizes and ranges
  file_too_large: { status: 413, description: 'An uploaded file is over the size limit' },
  range_not_satisfiable: { status: 416, description: 'The requested byte range is outside the file' },

  // 422: understood but not valid
  invalid_description: { status: 422, description: 'A skill description is not 1-1024 characters' },
  invalid_jsonc: { status: 422, description: 'An OpenCode config file is not valid JSONC or not an object' },

  // 426 and 429
  websocket_upgrade_required: { status: 426, description: 'This route needs a WebSocket upgrade' },
  too_many_pending_approvals: { status: 429, description: 'Too many writes already await approval' },
  too_many_file_sessions: { status: 429, description: 'Too many file sessions are open; close one or wait' },
  sidecar_socket_limit: { status: 429, description: 'Too many relayed WebSockets for this token' },

  // 500
  import_failed: { status: 500, description: 'An import failed and was rolled back; nothing was changed' },

  import_storage_full: {
    status: 507,
    description: 'The disk is full; the import was rolled back, nothing was changed',
  },

  // 502, 503 and 504: the sidecar or the server cannot answer now
  sidecar_unreachable: { status: 502, description: 'The sidecar cannot be reached (details.cause)' },
  sidecar_auth_failed: { status: 502, description: 'The sidecar rejected the configured sidecar credentials' },
  sidecar_redirect_refused: { status: 502, description: 'The sidecar answered with a redirect, which is not followed' },
  sidecar_request_failed: { status: 502, description: 'A lookup the proxy needed from the sidecar failed' },
  sidecar_response_failed: { status: 502, description: 'The sidecar answer broke off or was not valid JSON' },
  sidecar_response_too_large: { status: 502, description: 'The sidecar answer is too large to filter' },
  sidecar_reload_failed: { status: 502, description: 'The sidecar refused to reload' },
  org_unreachable: {
    status: 502,
    description: 'The control plane could not be reached or did not start the device flow',
  },
  server_stopping: { status: 503, description: 'The server is stopping; the write was not made' },
  sidecar_reload_timeout: { status: 504, description: 'The sidecar did not finish reloading in time' },
})

/** A workspace error code. */
export type WorkspaceErrorCode = keyof typeof WORKSPACE_ERRORS

/** Makes an error with one of the {@link WORKSPACE_ERRORS} codes and its catalogued status. */
export const workspaceError = errorFactory(WORKSPACE_ERRORS)
