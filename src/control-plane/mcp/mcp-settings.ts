/**
 * Limits of the MCP endpoint (config file key `mcp`). Every session is memory on one instance, so
 * each bounded thing has a cap: sessions per credential, idle time, request bodies, what an event
 * stream may hold for a client that stopped reading, and how much each session keeps for resuming.
 * @module
 */
import * as v from 'valibot'

/** Resolved MCP limits. */
export interface McpLimits {
  /** Open sessions per credential (API key, session token or OAuth token); the oldest idle one is closed for a new one. */
  maxSessionsPerCredential: number
  /** Open sessions on this instance in total; beyond it `initialize` is refused with 503. */
  maxSessions: number
  /** A session with no request and no open stream for this long is closed. */
  idleSessionSeconds: number
  /** Largest JSON-RPC request body, in bytes (413 over it). */
  maxBodyBytes: number
  /** Bytes an event stream may hold unsent for a client that stopped reading before it is cut off. */
  maxBufferedBytes: number
  /** Messages each session keeps for `Last-Event-ID` resumption (oldest dropped first). */
  resumeEvents: number
  /** Largest skill file served as a resource, in bytes; larger files are listed but refused on read. */
  maxResourceBytes: number
}

/** Defaults, documented in docs/control-plane-api.md (MCP). */
export const MCP_DEFAULTS: McpLimits = {
  maxSessionsPerCredential: 8,
  maxSessions: 1000,
  idleSessionSeconds: 30 * 60,
  maxBodyBytes: 1024 * 1024,
  maxBufferedBytes: 1024 * 1024,
  resumeEvents: 256,
  maxResourceBytes: 5 * 1024 * 1024,
}

const count = (max: number) => v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(max)))

/** The `mcp` key of the control-plane config file. */
export const McpFileSchema = v.strictObject({
  maxSessionsPerCredential: count(1000),
  maxSessions: count(100_000),
  idleSessionSeconds: count(7 * 24 * 3600),
  maxBodyBytes: count(64 * 1024 * 1024),
  maxBufferedBytes: count(256 * 1024 * 1024),
  resumeEvents: count(100_000),
  maxResourceBytes: count(256 * 1024 * 1024),
})

/** The limits with the file's overrides. */
export function mcpLimits(file: v.InferOutput<typeof McpFileSchema> | undefined): McpLimits {
  const out = { ...MCP_DEFAULTS }
  for (const [key, value] of Object.entries(file ?? {})) if (value !== undefined) out[key as keyof McpLimits] = value
  return out
}
