/**
 * MCP servers: the project config's `mcp` map. `local` entries need a non-empty `command` array
 * of strings, `remote` entries an http(s) `url`. Lists never echo secrets: header and
 * environment values, OAuth client secrets and URL credentials are masked.
 * @module
 */
import { errors } from '../../core/errors.ts'
import { editOpencodeConfig, readOpencodeConfig } from '../config/opencode-config-file.ts'

/** Valid MCP entry names. */
export const MCP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/
/** What a masked value reads as. */
export const MASK = '********'

/** One listed MCP entry (config masked). */
export interface McpItem {
  name: string
  config: Record<string, unknown>
  source: 'config.project'
}

/** Throws 400 `invalid_mcp_name` unless valid. */
export function validateMcpName(name: string): string {
  if (!MCP_NAME.test(name))
    throw errors.badRequest('invalid_mcp_name', 'MCP name must be 1-64 letters, digits, _ or -, not starting with -')
  return name
}

/** Throws 400 `invalid_mcp_config` unless the entry is a valid local or remote server. */
export function validateMcpConfig(config: Record<string, unknown>): Record<string, unknown> {
  const bad = (message: string) => errors.badRequest('invalid_mcp_config', message)
  if (config.type === 'local') {
    const command = config.command
    if (!Array.isArray(command) || command.length === 0 || !command.every((p) => typeof p === 'string' && p.length > 0))
      throw bad('Local MCP needs a non-empty command array of non-empty strings')
  } else if (config.type === 'remote') {
    const url = config.url
    if (typeof url !== 'string' || url !== url.trim() || !/^https?:\/\/[^\s/]+/i.test(url))
      throw bad('Remote MCP needs an http(s) url')
    try {
      new URL(url)
    } catch {
      throw bad('Remote MCP url is not a valid URL')
    }
  } else {
    throw bad('MCP type must be "local" or "remote"')
  }
  for (const key of ['headers', 'environment'] as const) {
    const map = config[key]
    if (
      map !== undefined &&
      (typeof map !== 'object' ||
        map === null ||
        Array.isArray(map) ||
        !Object.values(map).every((v) => typeof v === 'string'))
    )
      throw bad(`MCP ${key} must map names to strings`)
  }
  if (config.enabled !== undefined && typeof config.enabled !== 'boolean')
    throw bad('MCP enabled must be true or false')
  return config
}

function maskMap(map: unknown): unknown {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) return map
  return Object.fromEntries(Object.keys(map).map((k) => [k, MASK]))
}

function maskUrl(url: unknown): unknown {
  if (typeof url !== 'string') return url
  try {
    const parsed = new URL(url)
    if (!parsed.username && !parsed.password) return url
    parsed.username = parsed.username ? MASK : ''
    parsed.password = parsed.password ? MASK : ''
    return parsed.toString()
  } catch {
    return url
  }
}

/** A copy of an entry safe to show any client. */
export function maskMcpConfig(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config }
  if ('headers' in out) out.headers = maskMap(out.headers)
  if ('environment' in out) out.environment = maskMap(out.environment)
  if ('url' in out) out.url = maskUrl(out.url)
  if (out.oauth && typeof out.oauth === 'object' && !Array.isArray(out.oauth)) {
    const oauth = { ...(out.oauth as Record<string, unknown>) }
    for (const key of Object.keys(oauth)) if (/secret|token|password/i.test(key)) oauth[key] = MASK
    out.oauth = oauth
  }
  return out
}

/**
 * A copy of a config's `mcp` map with every entry masked: what any caller but the host sees of it
 * (in `GET …/config` and exports), since header and environment values are usually credentials.
 */
export function maskMcpMap(map: unknown): unknown {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) return map
  return Object.fromEntries(
    Object.entries(map).map(([name, entry]) => [
      name,
      typeof entry === 'object' && entry !== null && !Array.isArray(entry)
        ? maskMcpConfig(entry as Record<string, unknown>)
        : entry,
    ]),
  )
}

/**
 * A copy of a config's `mcp` map for export: header and environment values, OAuth secrets and URL
 * credentials are left out entirely (not masked: a mask would travel into the importing
 * workspace as if it were the value). Names stay, so the importer sees what to fill in.
 */
export function withoutMcpSecrets(map: unknown): unknown {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) return map
  return Object.fromEntries(
    Object.entries(map).map(([name, entry]) => {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return [name, entry]
      const out: Record<string, unknown> = { ...(entry as Record<string, unknown>) }
      for (const key of ['headers', 'environment'] as const) {
        const values = out[key]
        if (values && typeof values === 'object' && !Array.isArray(values))
          out[key] = Object.fromEntries(Object.keys(values).map((k) => [k, '']))
      }
      if (out.oauth && typeof out.oauth === 'object' && !Array.isArray(out.oauth))
        out.oauth = Object.fromEntries(
          Object.entries(out.oauth as Record<string, unknown>).filter(([k]) => !/secret|token|password/i.test(k)),
        )
      if (typeof out.url === 'string') {
        try {
          const url = new URL(out.url)
          if (url.username || url.password) {
            url.username = ''
            url.password = ''
            out.url = url.toString()
          }
        } catch {
          // Not a URL: nothing to strip.
        }
      }
      return [name, out]
    }),
  )
}

/**
 * An incoming `mcp` map with masked values put back from the current one: a client that read the
 * masked config and writes it back must not replace the real headers, environment values, OAuth
 * secrets or URL credentials with the mask.
 */
export function unmaskMcpMap(incoming: unknown, current: Record<string, Record<string, unknown>>): unknown {
  if (typeof incoming !== 'object' || incoming === null || Array.isArray(incoming)) return incoming
  const out: Record<string, unknown> = {}
  for (const [name, entry] of Object.entries(incoming)) {
    const before = current[name]
    if (!before || typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      out[name] = entry
      continue
    }
    const next: Record<string, unknown> = { ...(entry as Record<string, unknown>) }
    for (const key of ['headers', 'environment', 'oauth'] as const) {
      const map = next[key]
      const old = before[key]
      if (!map || typeof map !== 'object' || Array.isArray(map) || !old || typeof old !== 'object') continue
      next[key] = Object.fromEntries(
        Object.entries(map).map(([k, value]) => [
          k,
          value === MASK && typeof (old as Record<string, unknown>)[k] === 'string'
            ? (old as Record<string, unknown>)[k]
            : value,
        ]),
      )
    }
    if (typeof next.url === 'string' && next.url.includes(MASK) && maskUrl(before.url) === next.url)
      next.url = before.url
    out[name] = next
  }
  return out
}

/** The config's MCP map (entries that are objects). */
export function mcpEntries(config: Record<string, unknown>): Record<string, Record<string, unknown>> {
  const map = config.mcp
  if (typeof map !== 'object' || map === null || Array.isArray(map)) return {}
  return Object.fromEntries(
    Object.entries(map).filter(([, v]) => typeof v === 'object' && v !== null && !Array.isArray(v)),
  ) as Record<string, Record<string, unknown>>
}

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
  if (!mcpEntries(data)[name]) throw errors.notFound('mcp_not_found', `MCP ${name} not found`)
  await editOpencodeConfig(root, [{ path: ['mcp', name, 'enabled'], value: enabled }])
}
