/**
 * Workspace configuration: the project config (`opencode.jsonc`/`opencode.json`) and the
 * server's per-workspace settings (`.opencode/service.json`). Reads come from the workspace's
 * read cache; PATCH replaces top-level keys as text edits so comments and formatting survive.
 * @module
 */
import { workspaceError } from '../workspace-errors.ts'
import { writeContained } from '../base/atomic-write.ts'
import { mcpEntries } from '../../opencode/mcp-entries.ts'
import { unmaskMcpMap } from './mcp-maps.ts'
import { editedOpencodeConfig, readOpencodeConfig } from './opencode-config-file.ts'
import { readContainedText } from '../base/workspace-path.ts'
import type { ReadCache } from '../base/read-cache.ts'
import { SERVICE_CONFIG_FILE } from './workspace-layout.ts'

/** `GET /workspace/:id/config` body. */
export interface WorkspaceConfigView {
  opencode: Record<string, unknown>
  workspace: Record<string, unknown>
  updatedAt: number | null
}

/**
 * Reads `.opencode/service.json`; 422 `invalid_json` when it is not a JSON object, 400
 * `invalid_path` when it (or `.opencode`) resolves outside the workspace.
 */
export async function readServiceConfig(root: string): Promise<Record<string, unknown>> {
  const text = await readContainedText(root, SERVICE_CONFIG_FILE)
  if (text === null || text.trim() === '') return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw workspaceError('invalid_json', `Failed to parse ${SERVICE_CONFIG_FILE}`, { status: 422 })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw workspaceError('invalid_json', `${SERVICE_CONFIG_FILE} must contain a JSON object`, { status: 422 })
  return value as Record<string, unknown>
}

/** The cached parsed project config. */
export function cachedOpencodeConfig(root: string, cache: ReadCache) {
  return cache.get('opencode', () => readOpencodeConfig(root))
}

/** Both config documents, from the cache. */
export async function readWorkspaceConfig(
  root: string,
  cache: ReadCache,
): Promise<{ opencode: Record<string, unknown>; workspace: Record<string, unknown> }> {
  const [opencode, workspace] = await Promise.all([
    cachedOpencodeConfig(root, cache),
    cache.get('service', () => readServiceConfig(root)),
  ])
  return { opencode: opencode.data, workspace }
}

/** A validated config patch. */
export interface ConfigPatch {
  opencode?: Record<string, unknown>
  workspace?: Record<string, unknown>
}

/**
 * What a patch would leave in each file it touches, not written: each top-level `opencode` key is
 * replaced (null removes it, arrays are replaced, not merged); `workspace` keys are shallow-merged
 * into service.json. Both files are parsed first, so an invalid one fails the patch unwritten.
 */
export async function configPatchTexts(
  root: string,
  patch: ConfigPatch,
): Promise<Array<{ path: string; after: string }>> {
  const service = patch.workspace ? await readServiceConfig(root) : undefined
  const out: Array<{ path: string; after: string }> = []
  if (patch.opencode) {
    const current = await readOpencodeConfig(root)
    const next = await editedOpencodeConfig(
      root,
      Object.entries(patch.opencode).map(([key, value]) => ({
        path: [key],
        // Readers see MCP secrets masked; writing that view back keeps the real values.
        value: value === null ? undefined : key === 'mcp' ? unmaskMcpMap(value, mcpEntries(current.data)) : value,
      })),
    )
    out.push({ path: next.rel, after: next.text })
  }
  if (patch.workspace && service) {
    const merged: Record<string, unknown> = { ...service }
    for (const [key, value] of Object.entries(patch.workspace)) {
      if (value === null) delete merged[key]
      else merged[key] = value
    }
    out.push({ path: SERVICE_CONFIG_FILE, after: JSON.stringify(merged, null, 2) + '\n' })
  }
  return out
}

/** Applies a patch (see {@link configPatchTexts}); each file is written atomically and contained. */
export async function applyConfigPatch(root: string, patch: ConfigPatch): Promise<void> {
  // `.opencode` linked outside the workspace is refused, like the file data plane.
  for (const { path, after } of await configPatchTexts(root, patch)) await writeContained(root, path, after)
}
