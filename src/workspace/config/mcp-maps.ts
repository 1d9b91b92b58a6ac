/**
 * A project config's whole `mcp` map masked, stripped or unmasked, entry by entry with OpenCode's
 * rules (`src/opencode/mcp-entries.ts`). Here in config, below its readers (the config writer, the
 * approval descriptions, the sidecar's masks, exports), so none of them reaches up into extensions.
 * @module
 */
import { maskMcpEntry, mapMcpEntries, stripMcpSecrets, unmaskMcpEntry } from '../../opencode/mcp-entries.ts'

/**
 * A copy of a config's `mcp` map with every entry masked: what any caller but the host sees of it
 * (in `GET …/config` and exports), since header and environment values are usually credentials.
 */
export function maskMcpMap(map: unknown): unknown {
  return mapMcpEntries(map, maskMcpEntry)
}

/** A copy of a config's `mcp` map for export, secret values left out (see `stripMcpSecrets`). */
export function withoutMcpSecrets(map: unknown): unknown {
  return mapMcpEntries(map, stripMcpSecrets)
}

/** An incoming `mcp` map with masked values put back from the current one (see `unmaskMcpEntry`). */
export function unmaskMcpMap(incoming: unknown, current: Record<string, Record<string, unknown>>): unknown {
  return mapMcpEntries(incoming, (entry, name) => (current[name] ? unmaskMcpEntry(entry, current[name]) : entry))
}
