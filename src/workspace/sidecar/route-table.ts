/**
 * The sidecar allow-list: every OpenCode route the proxy forwards, in one table.
 *
 * Each row names who may call the route, whether it changes workspace or machine state, and how its
 * path, query and body are pinned to the mount's workspace. The proxy's route declarations (and so
 * the OpenAPI document), the enforcement in `route-policy.ts` and the table in
 * `docs/sidecar-proxy.md` are all generated from these rows, so they cannot disagree. A route that is
 * not here reaches the sidecar only with the host's credentials (owner token or host token); everyone
 * else gets 403 `sidecar_route_not_allowed`. The rows cover `opencode-ai` 1.18.33, and a test reads
 * that version's own OpenAPI document and fails on any route this table does not classify.
 *
 * Roles: `viewer` reads the workspace; `collaborator` drives it (sessions, terminals, replies);
 * `owner` is the host (owner token or host token): routes that reach beyond the workspace (other
 * projects, machine-wide config, credentials, upgrades) or are not part of a workspace client's job.
 * @module
 */
import type { HttpMethod } from '../../core/route.ts'
import type { BodyPins } from './request-pins.ts'
import type { SecretView } from './secret-mask.ts'

/** Who may call a sidecar route. */
export type SidecarRole = 'viewer' | 'collaborator' | 'owner'

/**
 * How a state-changing route is governed beyond its role: `approval` goes through the host approval
 * gate like the native config writes and is audited; `audited` is recorded in the audit log.
 */
export type WriteGovernance = 'approval' | 'audited'

/** One allow-listed route. */
export interface SidecarRouteEntry {
  method: HttpMethod
  /** OpenCode's path in itty form (`/session/:sessionID`); `:name+` is a greedy tail. */
  path: string
  /** OpenCode's operationId, which our operation ids are derived from. */
  operationId: string
  role: SidecarRole
  /** Changes state (workspace files, sessions, config, credentials, processes). */
  changesState: boolean
  /** `sse`: an event stream; `websocket`: relayed as a WebSocket after a 101 upgrade. */
  kind?: 'sse' | 'websocket'
  governance?: WriteGovernance
  /** Query parameters that name a file and must resolve inside the workspace. */
  queryPaths?: string[]
  /** The greedy tail parameter names a file that must resolve inside the workspace. */
  tailPath?: boolean
  /** Search results are filtered to paths inside the workspace (the finder follows symlinked folders). */
  filterResults?: boolean
  /**
   * The answer can carry `opencode.json(c)` content: MCP secrets in it are masked for principals
   * below the owner, as `GET …/config` masks them (`secret-mask.ts` says how, per kind).
   */
  secrets?: SecretView
  body?: BodyPins
  /** Why the row is classified as it is, when the method alone does not say. */
  note?: string
}

type Options = Omit<SidecarRouteEntry, 'method' | 'path' | 'operationId' | 'role' | 'changesState'> & {
  changesState?: boolean
}

const row = (
  method: HttpMethod,
  path: string,
  operationId: string,
  role: SidecarRole,
  options: Options = {},
): SidecarRouteEntry => ({ method, path, operationId, role, changesState: method !== 'GET', ...options })

const V1_SESSION_BODY: BodyPins = { sessions: ['parentID'], drop: ['workspaceID'] }
const GLOBAL = 'acts on every directory the sidecar serves, not just this workspace'
const CREDENTIALS = 'writes provider or integration credentials shared by every workspace'

/** The allow-list for opencode-ai 1.18.33. */
export const SIDECAR_ROUTES: readonly SidecarRouteEntry[] = [
  // Server-wide
  row('GET', '/global/health', 'global.health', 'viewer'),
  row('GET', '/global/event', 'global.event', 'viewer', {
    kind: 'sse',
    note: 'filtered to this workspace and directory-less events',
  }),
  row('GET', '/global/config', 'global.config.get', 'owner', { note: 'machine-wide config can hold provider keys' }),
  row('PATCH', '/global/config', 'global.config.update', 'owner', { governance: 'audited', note: GLOBAL }),
  row('POST', '/global/dispose', 'global.dispose', 'owner', { governance: 'audited', note: GLOBAL }),
  row('POST', '/global/upgrade', 'global.upgrade', 'owner', { governance: 'audited', note: 'replaces the binary' }),
  row('PUT', '/auth/:providerID', 'auth.set', 'owner', { governance: 'audited', note: CREDENTIALS }),
  row('DELETE', '/auth/:providerID', 'auth.remove', 'owner', { governance: 'audited', note: CREDENTIALS }),
  row('POST', '/log', 'app.log', 'collaborator', { changesState: false, note: 'writes a sidecar log line' }),
  row('GET', '/event', 'event.subscribe', 'viewer', { kind: 'sse' }),
  row('POST', '/instance/dispose', 'instance.dispose', 'collaborator', {
    note: 'reloads this workspace instance, like engine/reload',
  }),
  // Configuration
  row('GET', '/config', 'config.get', 'viewer', { secrets: 'config' }),
  row('PATCH', '/config', 'config.update', 'collaborator', {
    governance: 'approval',
    note: 'same approval gate as PATCH /workspace/:id/config',
  }),
  row('GET', '/config/providers', 'config.providers', 'viewer'),
  row('GET', '/provider', 'provider.list', 'viewer'),
  row('GET', '/provider/auth', 'provider.auth', 'viewer', { note: 'auth methods only, no secrets' }),
  row('POST', '/provider/:providerID/oauth/authorize', 'provider.oauth.authorize', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('POST', '/provider/:providerID/oauth/callback', 'provider.oauth.callback', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('GET', '/command', 'command.list', 'viewer'),
  row('GET', '/agent', 'app.agents', 'viewer'),
  row('GET', '/skill', 'app.skills', 'viewer'),
  row('GET', '/lsp', 'lsp.status', 'viewer'),
  row('GET', '/formatter', 'formatter.status', 'viewer'),
  row('GET', '/mcp', 'mcp.status', 'viewer'),
  row('POST', '/mcp', 'mcp.add', 'collaborator', {
    governance: 'approval',
    body: { paths: ['config.cwd'] },
    note: 'starts a server process; same approval gate as the native MCP writes',
  }),
  row('POST', '/mcp/:name/auth', 'mcp.auth.start', 'owner', { governance: 'audited', note: CREDENTIALS }),
  row('DELETE', '/mcp/:name/auth', 'mcp.auth.remove', 'owner', { governance: 'audited', note: CREDENTIALS }),
  row('POST', '/mcp/:name/auth/callback', 'mcp.auth.callback', 'owner', { governance: 'audited', note: CREDENTIALS }),
  row('POST', '/mcp/:name/auth/authenticate', 'mcp.auth.authenticate', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('POST', '/mcp/:name/connect', 'mcp.connect', 'collaborator'),
  row('POST', '/mcp/:name/disconnect', 'mcp.disconnect', 'collaborator'),
  // Files, search, version control
  row('GET', '/path', 'path.get', 'viewer'),
  row('GET', '/file', 'file.list', 'viewer', { queryPaths: ['path'] }),
  row('GET', '/file/content', 'file.read', 'viewer', { queryPaths: ['path'], secrets: 'file' }),
  row('GET', '/file/status', 'file.status', 'viewer'),
  row('GET', '/find', 'find.text', 'viewer', { filterResults: true, secrets: 'search' }),
  row('GET', '/find/file', 'find.files', 'viewer', { filterResults: true }),
  row('GET', '/find/symbol', 'find.symbols', 'viewer', { filterResults: true }),
  row('GET', '/vcs', 'vcs.get', 'viewer'),
  row('GET', '/vcs/status', 'vcs.status', 'viewer'),
  row('GET', '/vcs/diff', 'vcs.diff', 'viewer', { secrets: 'diff' }),
  row('GET', '/vcs/diff/raw', 'vcs.diff.raw', 'viewer', { secrets: 'diff-raw' }),
  row('POST', '/vcs/apply', 'vcs.apply', 'collaborator'),
  // Projects and worktrees
  row('GET', '/project', 'project.list', 'owner', { note: 'lists every project on the machine' }),
  row('GET', '/project/current', 'project.current', 'viewer'),
  row('POST', '/project/git/init', 'project.initGit', 'collaborator'),
  row('PATCH', '/project/:projectID', 'project.update', 'owner', { note: 'any project id, not only this one' }),
  row('GET', '/project/:projectID/directories', 'project.directories', 'owner', { note: 'any project id' }),
  row('POST', '/experimental/project/:projectID/copy/generate-name', 'experimental.projectCopy.generateName', 'owner'),
  row('POST', '/experimental/project/:projectID/copy', 'v2.projectCopy.create', 'owner', {
    note: 'creates a copy outside the workspace',
  }),
  row('DELETE', '/experimental/project/:projectID/copy', 'v2.projectCopy.remove', 'owner'),
  row('POST', '/experimental/project/:projectID/copy/refresh', 'v2.projectCopy.refresh', 'owner'),
  row('GET', '/experimental/worktree', 'worktree.list', 'viewer'),
  row('POST', '/experimental/worktree', 'worktree.create', 'owner', {
    note: 'creates a worktree outside the workspace',
  }),
  row('DELETE', '/experimental/worktree', 'worktree.remove', 'owner', { note: 'takes any directory in its body' }),
  row('POST', '/experimental/worktree/reset', 'worktree.reset', 'owner', { note: 'takes any directory in its body' }),
  // Experimental control plane and console (OpenCode's own multi-workspace features)
  row('GET', '/experimental/capabilities', 'experimental.capabilities.get', 'viewer'),
  row('GET', '/experimental/tool', 'tool.list', 'viewer'),
  row('GET', '/experimental/tool/ids', 'tool.ids', 'viewer'),
  row('GET', '/experimental/resource', 'experimental.resource.list', 'viewer'),
  row('GET', '/experimental/session', 'experimental.session.list', 'owner', {
    note: 'lists sessions of every directory',
  }),
  row('POST', '/experimental/session/:sessionID/background', 'experimental.session.background', 'collaborator'),
  row('POST', '/experimental/control-plane/move-session', 'experimental.controlPlane.moveSession', 'owner', {
    body: { sessions: ['sessionID'] },
    note: 'moves a session to another directory',
  }),
  row('GET', '/experimental/console', 'experimental.console.get', 'owner'),
  row('GET', '/experimental/console/orgs', 'experimental.console.listOrgs', 'owner'),
  row('POST', '/experimental/console/switch', 'experimental.console.switchOrg', 'owner', { governance: 'audited' }),
  row('GET', '/experimental/workspace/adapter', 'experimental.workspace.adapter.list', 'owner'),
  row('GET', '/experimental/workspace', 'experimental.workspace.list', 'owner'),
  row('POST', '/experimental/workspace', 'experimental.workspace.create', 'owner'),
  row('POST', '/experimental/workspace/sync-list', 'experimental.workspace.syncList', 'owner'),
  row('GET', '/experimental/workspace/status', 'experimental.workspace.status', 'owner'),
  row('DELETE', '/experimental/workspace/:workspaceID', 'experimental.workspace.remove', 'owner'),
  row('POST', '/experimental/workspace/warp', 'experimental.workspace.warp', 'owner', {
    body: { sessions: ['sessionID'] },
  }),
  row('POST', '/sync/start', 'sync.start', 'owner'),
  row('POST', '/sync/replay', 'sync.replay', 'owner', { note: 'takes any directory in its body' }),
  row('POST', '/sync/steal', 'sync.steal', 'owner', { body: { sessions: ['sessionID'] } }),
  row('POST', '/sync/history', 'sync.history.list', 'owner', { changesState: false }),
  // Terminals
  row('GET', '/pty/shells', 'pty.shells', 'viewer'),
  row('GET', '/pty', 'pty.list', 'viewer'),
  row('POST', '/pty', 'pty.create', 'collaborator', { body: { paths: ['cwd'] } }),
  row('GET', '/pty/:ptyID', 'pty.get', 'viewer'),
  row('PUT', '/pty/:ptyID', 'pty.update', 'collaborator'),
  row('DELETE', '/pty/:ptyID', 'pty.remove', 'collaborator'),
  row('POST', '/pty/:ptyID/connect-token', 'pty.connectToken', 'collaborator', {
    changesState: false,
    note: "OpenCode's own ticket; the proxy authenticates upstream itself",
  }),
  row('GET', '/pty/:ptyID/connect', 'pty.connect', 'collaborator', {
    kind: 'websocket',
    changesState: true,
    note: 'terminal input runs commands',
  }),
  // Prompts to the user
  row('GET', '/question', 'question.list', 'viewer'),
  row('POST', '/question/:requestID/reply', 'question.reply', 'collaborator'),
  row('POST', '/question/:requestID/reject', 'question.reject', 'collaborator'),
  row('GET', '/permission', 'permission.list', 'viewer'),
  row('POST', '/permission/:requestID/reply', 'permission.reply', 'collaborator'),
  // Sessions
  row('GET', '/session', 'session.list', 'viewer'),
  row('POST', '/session', 'session.create', 'collaborator', { body: V1_SESSION_BODY }),
  row('GET', '/session/status', 'session.status', 'viewer'),
  row('GET', '/session/:sessionID', 'session.get', 'viewer'),
  row('DELETE', '/session/:sessionID', 'session.delete', 'collaborator'),
  row('PATCH', '/session/:sessionID', 'session.update', 'collaborator'),
  row('GET', '/session/:sessionID/children', 'session.children', 'viewer'),
  row('GET', '/session/:sessionID/todo', 'session.todo', 'viewer'),
  row('GET', '/session/:sessionID/diff', 'session.diff', 'viewer', { secrets: 'diff' }),
  row('GET', '/session/:sessionID/message', 'session.messages', 'viewer'),
  row('POST', '/session/:sessionID/message', 'session.prompt', 'collaborator'),
  row('GET', '/session/:sessionID/message/:messageID', 'session.message', 'viewer'),
  row('DELETE', '/session/:sessionID/message/:messageID', 'session.deleteMessage', 'collaborator'),
  row('POST', '/session/:sessionID/fork', 'session.fork', 'collaborator'),
  row('POST', '/session/:sessionID/abort', 'session.abort', 'collaborator'),
  row('POST', '/session/:sessionID/init', 'session.init', 'collaborator'),
  row('POST', '/session/:sessionID/share', 'session.share', 'owner', {
    note: 'publishes the session outside this machine',
  }),
  row('DELETE', '/session/:sessionID/share', 'session.unshare', 'collaborator'),
  row('POST', '/session/:sessionID/summarize', 'session.summarize', 'collaborator'),
  row('POST', '/session/:sessionID/prompt_async', 'session.prompt_async', 'collaborator'),
  row('POST', '/session/:sessionID/command', 'session.command', 'collaborator'),
  row('POST', '/session/:sessionID/shell', 'session.shell', 'collaborator'),
  row('POST', '/session/:sessionID/revert', 'session.revert', 'collaborator'),
  row('POST', '/session/:sessionID/unrevert', 'session.unrevert', 'collaborator'),
  row('POST', '/session/:sessionID/permissions/:permissionID', 'permission.respond', 'collaborator'),
  row('DELETE', '/session/:sessionID/message/:messageID/part/:partID', 'part.delete', 'collaborator'),
  row('PATCH', '/session/:sessionID/message/:messageID/part/:partID', 'part.update', 'collaborator', {
    body: { sessions: ['sessionID'] },
  }),
  // The terminal UI remote control (a TUI attached to this sidecar)
  row('POST', '/tui/append-prompt', 'tui.appendPrompt', 'collaborator'),
  row('POST', '/tui/open-help', 'tui.openHelp', 'collaborator'),
  row('POST', '/tui/open-sessions', 'tui.openSessions', 'collaborator'),
  row('POST', '/tui/open-themes', 'tui.openThemes', 'collaborator'),
  row('POST', '/tui/open-models', 'tui.openModels', 'collaborator'),
  row('POST', '/tui/submit-prompt', 'tui.submitPrompt', 'collaborator'),
  row('POST', '/tui/clear-prompt', 'tui.clearPrompt', 'collaborator'),
  row('POST', '/tui/execute-command', 'tui.executeCommand', 'collaborator'),
  row('POST', '/tui/show-toast', 'tui.showToast', 'collaborator'),
  row('POST', '/tui/publish', 'tui.publish', 'owner', { note: 'publishes an arbitrary bus event' }),
  row('POST', '/tui/select-session', 'tui.selectSession', 'collaborator', { body: { sessions: ['sessionID'] } }),
  row('GET', '/tui/control/next', 'tui.control.next', 'collaborator', {
    changesState: true,
    note: 'takes the next request off the queue',
  }),
  row('POST', '/tui/control/response', 'tui.control.response', 'collaborator'),
  // V2 API
  row('GET', '/api/health', 'v2.health.get', 'viewer'),
  row('GET', '/api/location', 'v2.location.get', 'viewer'),
  row('GET', '/api/agent', 'v2.agent.list', 'viewer'),
  row('GET', '/api/session', 'v2.session.list', 'viewer'),
  row('POST', '/api/session', 'v2.session.create', 'collaborator', {
    body: { directories: ['location.directory'], drop: ['location.workspaceID', 'location.workspace'] },
  }),
  row('GET', '/api/session/active', 'v2.session.active', 'owner', { note: 'active sessions of every directory' }),
  row('GET', '/api/session/:sessionID', 'v2.session.get', 'viewer'),
  row('POST', '/api/session/:sessionID/agent', 'v2.session.switchAgent', 'collaborator'),
  row('POST', '/api/session/:sessionID/model', 'v2.session.switchModel', 'collaborator'),
  row('POST', '/api/session/:sessionID/prompt', 'v2.session.prompt', 'collaborator'),
  row('POST', '/api/session/:sessionID/compact', 'v2.session.compact', 'collaborator'),
  row('POST', '/api/session/:sessionID/wait', 'v2.session.wait', 'viewer', {
    changesState: false,
    note: 'waits for the session to go idle',
  }),
  row('POST', '/api/session/:sessionID/revert/stage', 'v2.session.revert.stage', 'collaborator'),
  row('POST', '/api/session/:sessionID/revert/clear', 'v2.session.revert.clear', 'collaborator'),
  row('POST', '/api/session/:sessionID/revert/commit', 'v2.session.revert.commit', 'collaborator'),
  row('GET', '/api/session/:sessionID/context', 'v2.session.context', 'viewer'),
  row('GET', '/api/session/:sessionID/history', 'v2.session.history', 'viewer'),
  row('GET', '/api/session/:sessionID/event', 'v2.session.events', 'viewer', { kind: 'sse' }),
  row('POST', '/api/session/:sessionID/interrupt', 'v2.session.interrupt', 'collaborator'),
  row('GET', '/api/session/:sessionID/message/:messageID', 'v2.session.message', 'viewer'),
  row('GET', '/api/session/:sessionID/message', 'v2.session.messages', 'viewer'),
  row('POST', '/api/session/:sessionID/permission', 'v2.session.permission.create', 'collaborator'),
  row('GET', '/api/session/:sessionID/permission', 'v2.session.permission.list', 'viewer'),
  row('GET', '/api/session/:sessionID/permission/:requestID', 'v2.session.permission.get', 'viewer'),
  row('POST', '/api/session/:sessionID/permission/:requestID/reply', 'v2.session.permission.reply', 'collaborator'),
  row('GET', '/api/session/:sessionID/question', 'v2.session.question.list', 'viewer'),
  row('POST', '/api/session/:sessionID/question/:requestID/reply', 'v2.session.question.reply', 'collaborator'),
  row('POST', '/api/session/:sessionID/question/:requestID/reject', 'v2.session.question.reject', 'collaborator'),
  row('GET', '/api/model', 'v2.model.list', 'viewer'),
  row('GET', '/api/provider', 'v2.provider.list', 'viewer'),
  row('GET', '/api/provider/:providerID', 'v2.provider.get', 'viewer'),
  row('GET', '/api/integration', 'v2.integration.list', 'viewer'),
  row('GET', '/api/integration/attempt/:attemptID', 'v2.integration.attempt.status', 'owner'),
  row('DELETE', '/api/integration/attempt/:attemptID', 'v2.integration.attempt.cancel', 'owner', {
    governance: 'audited',
  }),
  row('POST', '/api/integration/attempt/:attemptID/complete', 'v2.integration.attempt.complete', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('GET', '/api/integration/:integrationID', 'v2.integration.get', 'viewer'),
  row('POST', '/api/integration/:integrationID/connect/key', 'v2.integration.connect.key', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('POST', '/api/integration/:integrationID/connect/oauth', 'v2.integration.connect.oauth', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('PATCH', '/api/credential/:credentialID', 'v2.credential.update', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('DELETE', '/api/credential/:credentialID', 'v2.credential.remove', 'owner', {
    governance: 'audited',
    note: CREDENTIALS,
  }),
  row('GET', '/api/permission/request', 'v2.permission.request.list', 'viewer'),
  row('GET', '/api/permission/saved', 'v2.permission.saved.list', 'viewer'),
  row('DELETE', '/api/permission/saved/:savedID', 'v2.permission.saved.remove', 'owner', {
    note: 'saved permissions apply to every workspace',
  }),
  row('GET', '/api/fs/read/:filePath+', 'v2.fs.read', 'viewer', { tailPath: true, secrets: 'file' }),
  row('GET', '/api/fs/list', 'v2.fs.list', 'viewer', { queryPaths: ['path'] }),
  row('GET', '/api/fs/find', 'v2.fs.find', 'viewer', { filterResults: true }),
  row('GET', '/api/command', 'v2.command.list', 'viewer'),
  row('GET', '/api/skill', 'v2.skill.list', 'viewer'),
  row('GET', '/api/event', 'v2.event.subscribe', 'viewer', {
    kind: 'sse',
    note: 'filtered to this workspace and directory-less events',
  }),
  row('GET', '/api/pty', 'v2.pty.list', 'viewer'),
  row('POST', '/api/pty', 'v2.pty.create', 'collaborator', { body: { paths: ['cwd'] } }),
  row('GET', '/api/pty/:ptyID', 'v2.pty.get', 'viewer'),
  row('PUT', '/api/pty/:ptyID', 'v2.pty.update', 'collaborator'),
  row('DELETE', '/api/pty/:ptyID', 'v2.pty.remove', 'collaborator'),
  row('POST', '/api/pty/:ptyID/connect-token', 'v2.pty.connectToken', 'collaborator', { changesState: false }),
  row('GET', '/api/pty/:ptyID/connect', 'v2.pty.connect', 'collaborator', {
    kind: 'websocket',
    changesState: true,
    note: 'terminal input runs commands',
  }),
  row('GET', '/api/question/request', 'v2.question.request.list', 'viewer'),
  row('GET', '/api/reference', 'v2.reference.list', 'viewer'),
]
