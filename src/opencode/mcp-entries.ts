/**
 * MCP servers as OpenCode configures them under `mcp` in `opencode.json(c)`: `local` (a command it
 * starts) or `remote` (a URL it connects to), or `{enabled}` alone to switch off a server another
 * config layer defines. Written once for both surfaces: the shapes (checked against the
 * `McpLocalConfig`/`McpRemoteConfig` types of OpenCode 1.18), the stricter rule a new server added
 * through either API must meet, and the masking that keeps header, environment, OAuth and URL
 * secrets out of every view but the runtime's.
 * @module
 */
import * as v from 'valibot'

/** MCP entry names: the key under `mcp`. */
export const MCP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/
/** What a bad MCP name is told. */
export const MCP_NAME_RULE = 'MCP name must be 1-64 letters, digits, _ or -, not starting with -'

/** True when `name` is a valid MCP entry name. */
export function isMcpName(name: unknown): name is string {
  return typeof name === 'string' && MCP_NAME.test(name)
}

/** What a masked value reads as. */
export const MASK = '********'

const StringMap = v.record(v.string(), v.string())
// OpenCode: a positive whole number of milliseconds.
const Timeout = v.pipe(v.number(), v.integer(), v.minValue(1))
const OAuthFields = {
  clientId: v.optional(v.string()),
  clientSecret: v.optional(v.string()),
  scope: v.optional(v.string()),
  callbackPort: v.optional(v.number()),
  redirectUri: v.optional(v.string()),
}
// `false` turns OAuth detection off; anything else must be the settings object (chosen up front so
// a bad field is reported as itself, not as "expected false").
const OAuth = v.lazy((input) => (input === false ? v.literal(false) : v.looseObject(OAuthFields)))

/**
 * One entry of the `mcp` map as OpenCode reads it from a file: unknown keys are allowed (OpenCode
 * ignores them), an empty command or a URL it cannot reach are not its parser's concern either.
 */
export const McpEntryFileSchema = v.lazy((input) =>
  typeof input === 'object' && input !== null && 'type' in input ? McpServerFileSchema : McpToggleSchema,
)

const McpServerFileSchema = v.variant(
  'type',
  [
    v.looseObject({
      type: v.literal('local'),
      command: v.array(v.string()),
      cwd: v.optional(v.string()),
      environment: v.optional(StringMap),
      enabled: v.optional(v.boolean()),
      timeout: v.optional(Timeout),
    }),
    v.looseObject({
      type: v.literal('remote'),
      url: v.string(),
      enabled: v.optional(v.boolean()),
      headers: v.optional(StringMap),
      oauth: v.optional(OAuth),
      timeout: v.optional(Timeout),
    }),
  ],
  'type must be "local" or "remote"',
)

/** `{enabled}` without a type: turns a server defined in another config layer on or off. */
const McpToggleSchema = v.looseObject({
  enabled: v.boolean('an MCP entry without a type needs enabled: true or false'),
})

function isHttpUrl(url: string): boolean {
  if (url !== url.trim() || !/^https?:\/\/[^\s/]+/i.test(url)) return false
  try {
    new URL(url)
    return true
  } catch {
    return false
  }
}

const LOCAL_COMMAND_RULE = 'a local MCP server needs command: a non-empty array of non-empty strings'
const REMOTE_URL_RULE = 'a remote MCP server needs an http(s) url'

/**
 * A server added or replaced through either API: a file entry with a runnable command or a
 * reachable URL. Keys OpenCode does not know are left out (it would ignore them anyway).
 */
const McpServerSchema = v.variant(
  'type',
  [
    v.object({
      type: v.literal('local'),
      command: v.pipe(
        v.array(v.pipe(v.string(LOCAL_COMMAND_RULE), v.nonEmpty(LOCAL_COMMAND_RULE)), LOCAL_COMMAND_RULE),
        v.nonEmpty(LOCAL_COMMAND_RULE),
      ),
      cwd: v.optional(v.string('cwd must be a string')),
      environment: v.optional(v.record(v.string(), v.string(), 'environment must map names to strings')),
      enabled: v.optional(v.boolean('enabled must be true or false')),
      timeout: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, 'timeout must be a positive number of ms'))),
    }),
    v.object({
      type: v.literal('remote'),
      url: v.pipe(v.string(REMOTE_URL_RULE), v.check(isHttpUrl, REMOTE_URL_RULE)),
      enabled: v.optional(v.boolean('enabled must be true or false')),
      headers: v.optional(v.record(v.string(), v.string(), 'headers must map names to strings')),
      oauth: v.optional(v.lazy((input) => (input === false ? v.literal(false) : v.object(OAuthFields)))),
      timeout: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, 'timeout must be a positive number of ms'))),
    }),
  ],
  'type must be "local" (with command) or "remote" (with url)',
)

/** A validated MCP server entry. */
export type McpServer = v.InferOutput<typeof McpServerSchema>

/** The outcome of {@link checkMcpServer}: the entry, or the first field at fault. */
export type McpServerCheck =
  | { ok: true; server: Record<string, unknown> }
  | { ok: false; path: string; message: string }

/**
 * Checks an entry a client sends. On success the entry keeps the keys OpenCode knows, in the
 * order the client wrote them; on failure `path` is the dotted field inside the entry
 * (`command`, `headers.X-Key`, `''` for the entry itself).
 */
export function checkMcpServer(value: unknown): McpServerCheck {
  const result = v.safeParse(McpServerSchema, value)
  if (!result.success) {
    const issue = result.issues[0]!
    return { ok: false, path: v.getDotPath(issue) ?? '', message: issue.message }
  }
  const known = result.output as Record<string, unknown>
  const ordered = Object.keys(value as Record<string, unknown>).filter((k) => known[k] !== undefined)
  return { ok: true, server: Object.fromEntries(ordered.map((k) => [k, known[k]])) }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const SECRET_OAUTH_KEY = /secret|token|password/i

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

/** A copy of an entry safe to show any client: secret values read as {@link MASK}, names stay. */
export function maskMcpEntry(entry: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...entry }
  for (const key of ['headers', 'environment'] as const)
    if (isRecord(out[key])) out[key] = Object.fromEntries(Object.keys(out[key]).map((k) => [k, MASK]))
  if ('url' in out) out.url = maskUrl(out.url)
  if (isRecord(out.oauth))
    out.oauth = Object.fromEntries(
      Object.entries(out.oauth).map(([k, value]) => [k, SECRET_OAUTH_KEY.test(k) ? MASK : value]),
    )
  return out
}

/**
 * A copy of an entry for export: header and environment values, OAuth secrets and URL credentials
 * are left out entirely (not masked: a mask would travel into the importing workspace as if it
 * were the value). Names stay, so the importer sees what to fill in.
 */
export function stripMcpSecrets(entry: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...entry }
  for (const key of ['headers', 'environment'] as const)
    if (isRecord(out[key])) out[key] = Object.fromEntries(Object.keys(out[key]).map((k) => [k, '']))
  if (isRecord(out.oauth))
    out.oauth = Object.fromEntries(Object.entries(out.oauth).filter(([k]) => !SECRET_OAUTH_KEY.test(k)))
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
  return out
}

/**
 * An entry a client sends back after reading it masked, with each masked value put back from the
 * stored entry: writing the view back must not replace real headers, environment values, OAuth
 * secrets or URL credentials with the mask.
 */
export function unmaskMcpEntry(
  incoming: Record<string, unknown>,
  stored: Record<string, unknown>,
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...incoming }
  for (const key of ['headers', 'environment', 'oauth'] as const) {
    const map = next[key]
    const old = stored[key]
    if (!isRecord(map) || !isRecord(old)) continue
    next[key] = Object.fromEntries(
      Object.entries(map).map(([k, value]) => [k, value === MASK && typeof old[k] === 'string' ? old[k] : value]),
    )
  }
  if (typeof next.url === 'string' && next.url.includes(MASK) && maskUrl(stored.url) === next.url) next.url = stored.url
  return next
}

/** The entries of a config's `mcp` map that are objects (what OpenCode can use). */
export function mcpEntries(config: Record<string, unknown>): Record<string, Record<string, unknown>> {
  const map = config.mcp
  if (!isRecord(map)) return {}
  return Object.fromEntries(Object.entries(map).filter(([, entry]) => isRecord(entry))) as Record<
    string,
    Record<string, unknown>
  >
}

/** Applies `each` to every object entry of an `mcp` map; anything else passes through unchanged. */
export function mapMcpEntries(
  map: unknown,
  each: (entry: Record<string, unknown>, name: string) => Record<string, unknown>,
): unknown {
  if (!isRecord(map)) return map
  return Object.fromEntries(
    Object.entries(map).map(([name, entry]) => [name, isRecord(entry) ? each(entry, name) : entry]),
  )
}
