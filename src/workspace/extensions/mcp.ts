/**
 * MCP servers: the project config's `mcp` map, listed masked and edited as text in place. The
 * entry shapes, the rule a new server meets and the masking are OpenCode's format, shared with
 * the control plane (`src/opencode/mcp-entries.ts`); this module adds the workspace's file edits
 * and its 400 errors.
 * @module
 */
import { checkMcpServer, isMcpName, MCP_NAME_RULE, maskMcpEntry, mcpEntries } from '../../opencode/mcp-entries.ts'
import { editOpencodeConfig, readOpencodeConfig } from '../config/opencode-config-file.ts'
import { workspaceError } from '../workspace-errors.ts'

export { MASK, MCP_NAME, mcpEntries } from '../../opencode/mcp-entries.ts'

/** One listed MCP entry (config masked). */
export interface McpItem {
  name: string
  config: Record<string, unknown>
  source: 'config.project'
}

/** Throws 400 `invalid_mcp_name` unless valid. */
export function validateMcpName(name: string): string {
  if (!isMcpName(name)) throw workspaceError('invalid_mcp_name', MCP_NAME_RULE)
  return name
}

/**
 * The entry to write for a local or remote server (keys OpenCode does not know left out); 400
 * `invalid_mcp_config` naming the field otherwise.
 */
export function validateMcpConfig(config: Record<string, unknown>): Record<string, unknown> {
  const checked = checkMcpServer(config)
  if (!checked.ok)
    throw workspaceError('invalid_mcp_config', `MCP ${checked.path ? `${checked.path}: ` : ''}${checked.message}`)
  return checked.server
}

/** A copy of an entry safe to show any client. */
export const maskMcpConfig = maskMcpEntry

/** Lists MCP entries, masked, sorted by name. */
export function listMcp(config: Record<string, unknown>): McpItem[] {
  return Object.entries(mcpEntries(config))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, entry]) => ({ name, config: maskMcpConfig(entry), source: 'config.project' }))
}

/** Adds or replaces an entry (a text edit at `mcp.<name>`). */
export async function upsertMcp(root: string, name: string, config: Record<string, unknown>): Promise<void> {
  await editOpencodeConfig(root, [{ path: ['mcp', name], value: config }])
}

/** Removes an entry. */
export async function removeMcp(root: string, name: string): Promise<void> {
  await editOpencodeConfig(root, [{ path: ['mcp', name], value: undefined }])
}

/** Sets `enabled` on an entry; 404 when it vanished meanwhile. */
export async function setMcpEnabled(root: string, name: string, enabled: boolean): Promise<void> {
  const { data } = await readOpencodeConfig(root)
  if (!mcpEntries(data)[name]) throw workspaceError('mcp_not_found', `MCP ${name} not found`)
  await editOpencodeConfig(root, [{ path: ['mcp', name, 'enabled'], value: enabled }])
}
