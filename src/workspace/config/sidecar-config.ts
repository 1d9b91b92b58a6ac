/**
 * Sidecar connection settings per workspace, resolved once at start from the config file and the
 * environment.
 *
 * Accepted shapes (ours first, then the reference's so an existing file works once moved):
 * - top level `sidecar: {baseUrl?, username?, password?, directory?, bin?, heartbeatMs?, …}` applies to
 *   every workspace without its own; `opencodeBaseUrl/opencodeUsername/opencodePassword/opencodeDirectory`
 *   are read as the same top-level default;
 * - per workspace `sidecar: {baseUrl, username?, password?, directory?}`, or the reference's flat
 *   `baseUrl/directory/opencodeUsername/opencodePassword`.
 * The directory defaults to the workspace path. A top-level directory only applies when exactly one
 * workspace is configured (pinning every workspace to one folder would merge them).
 * @module
 */
import { isAbsolute, resolve } from 'node:path'
import * as v from 'valibot'
import { ConfigError, envSchemas, envValue, type Env } from '../../core/settings.ts'

/** Where one workspace's sidecar lives and how to authenticate to it. Never serialised to clients. */
export interface SidecarTarget {
  /** `http(s)://host:port` without a trailing slash; null while a managed sidecar has not started. */
  baseUrl: string | null
  username: string
  password: string | null
  /** The directory every proxied request is pinned to. */
  directory: string
  /** True when the base URL comes from the managed sidecar process. */
  managed: boolean
}

/** Tuning shared by all workspaces. */
export interface SidecarTuning {
  /** Our heartbeat on a quiet event stream. */
  heartbeatMs: number
  /** How long an event stream may take to answer with headers. */
  eventEstablishTimeoutMs: number
  /** How long any other proxied request may take to answer with headers. */
  responseTimeoutMs: number
  /** A response body that sends nothing for this long is cut (event streams excepted). */
  bodyIdleTimeoutMs: number
  /** `POST /instance/dispose` deadline for engine reloads. */
  reloadTimeoutMs: number
  /** Whether extension writes reload the sidecar (debounced). */
  reloadOnExtensionChange: boolean
  /** Writes within this window produce one automatic reload. */
  reloadDebounceMs: number
}

/** Settings for a sidecar process we start ourselves. */
export interface ManagedSidecarSettings {
  /** The binary (`opencode`) started as `<bin> serve --port 0 --hostname 127.0.0.1`. */
  bin: string
  /** Extra arguments after `serve …`. */
  args: string[]
  /** Extra environment for the child (e.g. `OPENCODE_DISABLE_AUTOUPDATE`). */
  env: Record<string, string>
  /** How long to wait for its health after each start. */
  startTimeoutMs: number
}

/** Everything the sidecar module needs. */
export interface SidecarConfig {
  /** Targets by workspace id; a workspace absent here has no sidecar (400 `sidecar_unconfigured`). */
  targets: Map<string, SidecarTarget>
  tuning: SidecarTuning
  managed: ManagedSidecarSettings | null
}

const Url = v.pipe(
  v.string('must be a string'),
  v.url('must be a URL like http://127.0.0.1:4096'),
  v.regex(/^https?:\/\//i, 'must start with http:// or https://'),
)
const Name = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(200))
const Ms = (min: number, max: number) =>
  v.pipe(
    v.number('must be a number of milliseconds'),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  )

const ConnectionEntries = {
  baseUrl: v.optional(Url),
  username: v.optional(Name),
  password: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
  directory: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
}

const WorkspaceSidecarSchema = v.object(
  ConnectionEntries,
  'must be an object {baseUrl, username?, password?, directory?}',
)

const TopSidecarSchema = v.object(
  {
    ...ConnectionEntries,
    bin: v.optional(v.pipe(v.string('must be a string'), v.minLength(1))),
    args: v.optional(v.array(v.string(), 'must be an array of strings')),
    env: v.optional(v.record(v.string(), v.string(), 'must be an object of strings')),
    startTimeoutMs: v.optional(Ms(1000, 300_000)),
    heartbeatMs: v.optional(Ms(250, 300_000)),
    eventEstablishTimeoutMs: v.optional(Ms(100, 300_000)),
    responseTimeoutMs: v.optional(Ms(100, 3_600_000)),
    bodyIdleTimeoutMs: v.optional(Ms(100, 3_600_000)),
    reloadTimeoutMs: v.optional(Ms(100, 600_000)),
    reloadOnExtensionChange: v.optional(v.boolean('must be true or false')),
    reloadDebounceMs: v.optional(Ms(0, 600_000)),
  },
  'must be an object',
)

/** Defaults; the reference uses the same heartbeat (15 s), establish (5 s) and dispose (30 s) values. */
export const SIDECAR_DEFAULTS: SidecarTuning = {
  heartbeatMs: 15_000,
  eventEstablishTimeoutMs: 5_000,
  responseTimeoutMs: 300_000,
  bodyIdleTimeoutMs: 300_000,
  reloadTimeoutMs: 30_000,
  reloadOnExtensionChange: false,
  reloadDebounceMs: 1000,
}

/** The default username OpenCode expects with `OPENCODE_SERVER_PASSWORD`. */
export const DEFAULT_SIDECAR_USERNAME = 'opencode'

function parse<S extends v.GenericSchema>(schema: S, value: unknown, source: string, key: string): v.InferOutput<S> {
  const result = v.safeParse(schema, value)
  if (result.success) return result.output
  const issue = result.issues[0]!
  const path = v.getDotPath(issue)
  throw new ConfigError(source, path ? `${key}.${path}` : key, issue.message)
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '')
}

// Credentials written into the URL move to the Basic header: fetch refuses URLs with userinfo.
function splitUserinfo(raw: string): { url: string; username?: string; password?: string } {
  const url = new URL(raw)
  const username = url.username ? decodeURIComponent(url.username) : undefined
  const password = url.password ? decodeURIComponent(url.password) : undefined
  url.username = ''
  url.password = ''
  return { url: trimSlash(url.toString()), username, password }
}

/** A workspace as far as sidecar settings care. */
export interface SidecarWorkspaceInput {
  id: string
  path: string
  raw: Record<string, unknown>
}

/**
 * Resolves sidecar settings. Env (`SERVICE_SIDECAR_*`) overrides the file's top-level default per key.
 * Throws {@link ConfigError} naming the key at fault.
 */
export function resolveSidecarConfig(
  file: Record<string, unknown>,
  workspaces: readonly SidecarWorkspaceInput[],
  env: Env,
  source: string,
  fileDir: string,
): SidecarConfig {
  const top = file.sidecar === undefined ? {} : parse(TopSidecarSchema, file.sidecar, source, 'sidecar')
  const legacy = parse(
    v.object({
      opencodeBaseUrl: v.optional(Url),
      opencodeUsername: v.optional(Name),
      opencodePassword: v.optional(v.pipe(v.string(), v.minLength(1))),
      opencodeDirectory: v.optional(v.pipe(v.string(), v.minLength(1))),
      reloadOnExtensionChange: v.optional(v.boolean('must be true or false')),
    }),
    {
      opencodeBaseUrl: file.opencodeBaseUrl,
      opencodeUsername: file.opencodeUsername,
      opencodePassword: file.opencodePassword,
      opencodeDirectory: file.opencodeDirectory,
      reloadOnExtensionChange: file.reloadOnExtensionChange,
    },
    source,
    '',
  )
  const envUrl = envValue(env, 'SERVICE_SIDECAR_URL', Url)
  const defaults = {
    baseUrl: envUrl ?? top.baseUrl ?? legacy.opencodeBaseUrl,
    username: env.SERVICE_SIDECAR_USERNAME || top.username || legacy.opencodeUsername,
    password: env.SERVICE_SIDECAR_PASSWORD || top.password || legacy.opencodePassword,
    directory: env.SERVICE_SIDECAR_DIRECTORY || top.directory || legacy.opencodeDirectory,
  }
  const bin = env.SERVICE_SIDECAR_BIN || top.bin
  const managed: ManagedSidecarSettings | null =
    bin && !defaults.baseUrl
      ? { bin, args: top.args ?? [], env: top.env ?? {}, startTimeoutMs: top.startTimeoutMs ?? 30_000 }
      : null

  const targets = new Map<string, SidecarTarget>()
  workspaces.forEach((ws, index) => {
    const key = `workspaces[${index}]`
    const own =
      ws.raw.sidecar === undefined ? undefined : parse(WorkspaceSidecarSchema, ws.raw.sidecar, source, `${key}.sidecar`)
    const flat = parse(
      v.object({
        baseUrl: v.optional(Url),
        directory: v.optional(v.pipe(v.string(), v.minLength(1))),
        opencodeUsername: v.optional(Name),
        opencodePassword: v.optional(v.pipe(v.string(), v.minLength(1))),
      }),
      {
        baseUrl: ws.raw.baseUrl,
        directory: ws.raw.directory,
        opencodeUsername: ws.raw.opencodeUsername,
        opencodePassword: ws.raw.opencodePassword,
      },
      source,
      key,
    )
    const ownUrl = own?.baseUrl ?? flat.baseUrl
    const hasOwn = ownUrl !== undefined
    const baseUrl = hasOwn ? ownUrl : defaults.baseUrl
    if (!baseUrl && !managed) return
    const ownDirectory = own?.directory ?? flat.directory
    const sharedDirectory = workspaces.length === 1 ? defaults.directory : undefined
    const rawDirectory = ownDirectory ?? sharedDirectory
    const directory = rawDirectory
      ? isAbsolute(rawDirectory)
        ? resolve(rawDirectory)
        : resolve(fileDir, rawDirectory)
      : ws.path
    // Credentials follow the URL they came with: a workspace's own URL never receives the default password.
    const username = hasOwn ? (own?.username ?? flat.opencodeUsername) : defaults.username
    const password = hasOwn ? (own?.password ?? flat.opencodePassword) : defaults.password
    const split = baseUrl ? splitUserinfo(baseUrl) : null
    targets.set(ws.id, {
      baseUrl: split ? split.url : null,
      username: username ?? split?.username ?? DEFAULT_SIDECAR_USERNAME,
      password: password ?? split?.password ?? null,
      directory,
      managed: !baseUrl && !!managed,
    })
  })

  const envMs = (name: string) => envValue(env, name, envSchemas.positiveInt)
  const tuning: SidecarTuning = {
    heartbeatMs: envMs('SERVICE_SIDECAR_HEARTBEAT_MS') ?? top.heartbeatMs ?? SIDECAR_DEFAULTS.heartbeatMs,
    eventEstablishTimeoutMs:
      envMs('SERVICE_SIDECAR_EVENT_ESTABLISH_TIMEOUT_MS') ??
      top.eventEstablishTimeoutMs ??
      SIDECAR_DEFAULTS.eventEstablishTimeoutMs,
    responseTimeoutMs:
      envMs('SERVICE_SIDECAR_RESPONSE_TIMEOUT_MS') ?? top.responseTimeoutMs ?? SIDECAR_DEFAULTS.responseTimeoutMs,
    bodyIdleTimeoutMs:
      envMs('SERVICE_SIDECAR_BODY_IDLE_TIMEOUT_MS') ?? top.bodyIdleTimeoutMs ?? SIDECAR_DEFAULTS.bodyIdleTimeoutMs,
    reloadTimeoutMs:
      envMs('SERVICE_SIDECAR_RELOAD_TIMEOUT_MS') ?? top.reloadTimeoutMs ?? SIDECAR_DEFAULTS.reloadTimeoutMs,
    reloadOnExtensionChange:
      envValue(env, 'SERVICE_SIDECAR_RELOAD_ON_EXTENSION_CHANGE', envSchemas.bool) ??
      top.reloadOnExtensionChange ??
      legacy.reloadOnExtensionChange ??
      SIDECAR_DEFAULTS.reloadOnExtensionChange,
    reloadDebounceMs: top.reloadDebounceMs ?? SIDECAR_DEFAULTS.reloadDebounceMs,
  }
  return { targets, tuning, managed }
}

/** The base URL without any userinfo, safe for status output. */
export function publicBaseUrl(baseUrl: string | null): string | null {
  if (!baseUrl) return null
  try {
    const url = new URL(baseUrl)
    url.username = ''
    url.password = ''
    return trimSlash(url.toString())
  } catch {
    return null
  }
}
