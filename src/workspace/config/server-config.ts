/**
 * Workspace-mode configuration: file from `--config`, else `SERVICE_SERVER_CONFIG`, else
 * `~/.config/service/server.json`; per key flag > env > file > default.
 *
 * Key names follow the reference server (`host`, `port`, `token`, `hostToken`, `approval`,
 * `workspaces`, `corsOrigins`, `readOnly`) so an existing config file works once moved. Unlike the
 * reference, a file that exists but is invalid stops start-up instead of being read as empty.
 * @module
 */
import { SkillLimitsFileSchema } from '../../opencode/skill-wire.ts'
import { chmodSync, mkdirSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import * as v from 'valibot'
import { MetricsFileSchema } from '../../core/metrics-settings.ts'
import type { Flags } from '../../cli-flags.ts'
import { generateToken } from '../../core/secrets.ts'
import { sha256Hex } from '../../core/sha256.ts'
import {
  ConfigError,
  defaultConfigDir,
  defaultDataDir,
  envSchemas,
  envValue,
  flagValue,
  missingConfigFile,
  pick,
  readConfigFile,
  type Env,
  type SettingSource,
  serverSettings,
} from '../../core/settings.ts'
import { resolveSidecarConfig, type SidecarConfig } from './sidecar-config.ts'
import { FilesFileSchema, resolveFilesSettings, type FilesSettings } from './files-settings.ts'

const ApprovalMode = v.picklist(['manual', 'auto'], 'must be "manual" or "auto"')
const TimeoutMs = v.pipe(
  v.number('must be a number of milliseconds'),
  v.integer('must be a whole number'),
  v.minValue(1000, 'must be at least 1000'),
  v.maxValue(3_600_000, 'must be at most 3600000'),
)
const Port = v.pipe(
  v.number('must be a number'),
  v.integer('must be a whole number'),
  v.minValue(0, 'must be 0-65535'),
  v.maxValue(65535, 'must be 0-65535'),
)
const Secret = v.pipe(v.string('must be a string'), v.minLength(16, 'must be at least 16 characters'))

/** One `workspaces[]` entry in the file. */
export const WorkspaceEntrySchema = v.looseObject({
  path: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
  id: v.optional(
    v.pipe(v.string('must be a string'), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -')),
  ),
  name: v.optional(v.pipe(v.string('must be a string'), v.maxLength(200))),
})

/** The config file's known keys; unknown keys are kept (later features read them) and reported. */
export const ServerFileSchema = v.looseObject({
  /** Skill folder limits: maxFiles, maxFileBytes, maxBytes (defaults 200, 5 MiB, 20 MiB). */
  skills: v.optional(SkillLimitsFileSchema),
  host: v.optional(v.pipe(v.string('must be a string'), v.minLength(1))),
  port: v.optional(Port),
  token: v.optional(Secret),
  hostToken: v.optional(Secret),
  approval: v.optional(
    v.object({ mode: v.optional(ApprovalMode), timeoutMs: v.optional(TimeoutMs) }, 'must be an object'),
  ),
  workspaces: v.optional(v.array(WorkspaceEntrySchema, 'must be an array of {path, id?, name?}')),
  corsOrigins: v.optional(
    v.array(
      v.pipe(v.string(), v.regex(/^(\*|https?:\/\/[^/\s]+)$/, 'must be * or an origin like https://app.example')),
      'must be an array of origins',
    ),
  ),
  readOnly: v.optional(v.boolean('must be true or false')),
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1))),
  logFormat: v.optional(envSchemas.logFormat),
  logRequests: v.optional(v.boolean('must be true or false')),
  /** `GET /metrics` (see core/metrics-settings.ts; env SERVICE_METRICS* wins). */
  metrics: v.optional(MetricsFileSchema),
  /** Failed-authentication throttling per client address (see auth-throttle.ts for defaults). */
  authThrottle: v.optional(
    v.object(
      {
        maxFailures: v.optional(
          v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1')),
        ),
        windowSeconds: v.optional(
          v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1')),
        ),
        lockoutSeconds: v.optional(
          v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1')),
        ),
      },
      'must be an object',
    ),
  ),
  /** Workspace event log: events kept per workspace, and the watcher's quiet period. */
  events: v.optional(
    v.object(
      {
        retention: v.optional(
          v.pipe(
            v.number(),
            v.integer('must be a whole number'),
            v.minValue(10, 'must be at least 10'),
            v.maxValue(1_000_000, 'must be at most 1000000'),
          ),
        ),
        debounceMs: v.optional(
          v.pipe(
            v.number(),
            v.integer('must be a whole number'),
            v.minValue(10, 'must be at least 10'),
            v.maxValue(60_000, 'must be at most 60000'),
          ),
        ),
      },
      'must be an object',
    ),
  ),
  /** File sessions, inbox and outbox limits (see files/files-settings.ts). */
  ...FilesFileSchema,
})
/** The parsed config file. */
export type ServerFile = v.InferOutput<typeof ServerFileSchema>

/** A configured workspace with its stable id. */
export interface WorkspaceEntry {
  id: string
  name: string
  /** Absolute, symlink-resolved directory. */
  path: string
  /** The raw file entry, for keys later features read (e.g. `sidecar`). */
  raw: Record<string, unknown>
}

/** Everything workspace mode needs to start. Token values never leave this object except to auth. */
export interface WorkspaceServerConfig {
  configPath: string
  configFileFound: boolean
  host: string
  port: number
  token: string
  hostToken: string
  tokenSource: SettingSource
  hostTokenSource: SettingSource
  /** Tokens generated on this start; printed once by the entry point. */
  generated: { token?: string; hostToken?: string }
  /** Where generated tokens are kept (mode 0600). */
  credentialsPath: string
  approval: { mode: 'manual' | 'auto'; timeoutMs: number }
  workspaces: WorkspaceEntry[]
  corsOrigins: string[]
  readOnly: boolean
  dataDir: string
  logFormat: 'pretty' | 'json'
  logRequests: boolean
  /** The whole parsed file (or `{}`), for feature-specific keys. */
  file: ServerFile
  /** Unknown top-level keys found in the file, reported as a warning at start. */
  unknownKeys: string[]
  /** Sidecar connection per workspace, tuning and the managed process (never serialised to clients). */
  sidecar: SidecarConfig
  /** File sessions, inbox and outbox limits. */
  files: FilesSettings
}

/** Stable workspace id: `ws_` + first 12 hex of sha256 of the resolved path. */
export function workspaceIdFor(path: string): string {
  return 'ws_' + sha256Hex(path).slice(0, 12)
}

const KNOWN_KEYS = new Set(
  Object.keys(ServerFileSchema.entries).concat([
    'sidecar',
    'inbox',
    'outbox',
    'files',
    'limits',
    'tokenStore',
    'authorizedRoots',
    'opencodeBaseUrl',
    'opencodeDirectory',
    'opencodeUsername',
    'opencodePassword',
    'reloadOnExtensionChange',
  ]),
)

const CredentialsSchema = v.object({ token: v.optional(Secret), hostToken: v.optional(Secret) })

function loadOrCreateCredentials(
  path: string,
  need: { token: boolean; hostToken: boolean },
): { token?: string; hostToken?: string; created: { token?: string; hostToken?: string } } {
  const stored = readConfigFile(path, CredentialsSchema) ?? {}
  const created: { token?: string; hostToken?: string } = {}
  if (need.token && !stored.token) created.token = generateToken('svc_ct_', 24)
  if (need.hostToken && !stored.hostToken) created.hostToken = generateToken('svc_ht_', 24)
  if (created.token || created.hostToken) {
    const next = { ...stored, ...created }
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    const temp = `${path}.tmp-${process.pid}`
    writeFileSync(temp, JSON.stringify(next, null, 2) + '\n', { mode: 0o600 })
    chmodSync(temp, 0o600)
    renameSync(temp, path)
  } else if (stored.token || stored.hostToken) {
    // Tighten a file someone loosened by hand; tokens grant write access to the workspace.
    try {
      if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
    } catch {
      /* best effort */
    }
  }
  return { token: stored.token, hostToken: stored.hostToken, created }
}

function resolveWorkspaces(
  entries: Array<{ path: string; id?: string; name?: string; [k: string]: unknown }>,
  base: string,
  source: string,
): WorkspaceEntry[] {
  const seen = new Set<string>()
  return entries.map((entry, index) => {
    const absolute = resolve(base, entry.path)
    let real: string
    try {
      const stat = statSync(absolute)
      if (!stat.isDirectory())
        throw new ConfigError(source, `workspaces[${index}].path`, `${absolute} is not a directory`)
      real = realpathNative(absolute)
    } catch (error) {
      if (error instanceof ConfigError) throw error
      throw new ConfigError(source, `workspaces[${index}].path`, `${absolute} does not exist`)
    }
    const id = entry.id ?? workspaceIdFor(real)
    if (seen.has(id)) throw new ConfigError(source, `workspaces[${index}]`, `duplicate workspace id ${id}`)
    seen.add(id)
    const name = entry.name ?? real.split(/[\\/]/).filter(Boolean).pop() ?? real
    return { id, name, path: real, raw: entry }
  })
}

// Resolving every symlink once at start means containment checks later compare real paths.
function realpathNative(path: string): string {
  return realpathSync.native(path)
}

/** Resolves the workspace-mode configuration. Throws {@link ConfigError} on any invalid input. */
export function loadWorkspaceConfig(flags: Flags, env: Env, cwd: string): WorkspaceServerConfig {
  const configPath = resolve(
    cwd,
    (flags.config as string | undefined) ?? env.SERVICE_SERVER_CONFIG ?? join(defaultConfigDir(env), 'server.json'),
  )
  const fileOrNull = readConfigFile(configPath, ServerFileSchema)
  // A missing default file means "no settings"; a path someone typed that is not there is a mistake
  // (a typo would otherwise start with fresh tokens beside it). SERVICE_SERVER_CONFIG keeps the
  // lenient reading: hosted Workers point it at a file that is written only when needed.
  if (fileOrNull === null && flags.config !== undefined) throw missingConfigFile(configPath, '--config')
  const file: ServerFile = fileOrNull ?? {}
  const fileDir = dirname(configPath)
  const unknownKeys = Object.keys(file).filter((k) => !KNOWN_KEYS.has(k))

  const { host, port, corsOrigins, logFormat, logRequests } = serverSettings(flags, env, file, 8787)
  const [mode] = pick<'manual' | 'auto'>(
    [flagValue(flags, 'approval', ApprovalMode), 'flag'],
    [envValue(env, 'SERVICE_APPROVAL_MODE', ApprovalMode), 'env'],
    [file.approval?.mode, 'file'],
    ['manual', 'default'],
  )
  const timeoutSchema = v.pipe(envSchemas.positiveInt, TimeoutMs)
  const [timeoutMs] = pick<number>(
    [flagValue(flags, 'approval-timeout', timeoutSchema), 'flag'],
    [envValue(env, 'SERVICE_APPROVAL_TIMEOUT_MS', timeoutSchema), 'env'],
    [file.approval?.timeoutMs, 'file'],
    [30_000, 'default'],
  )
  const [readOnly] = pick<boolean>(
    [flags['read-only'] ? true : undefined, 'flag'],
    [envValue(env, 'SERVICE_READ_ONLY', envSchemas.bool), 'env'],
    [file.readOnly, 'file'],
    [false, 'default'],
  )
  const [dataDirRaw] = pick<string>(
    [flags['data-dir'] as string | undefined, 'flag'],
    [env.SERVICE_DATA_DIR || undefined, 'env'],
    [file.dataDir ? resolve(fileDir, file.dataDir) : undefined, 'file'],
    [defaultDataDir(env), 'default'],
  )

  for (const origin of corsOrigins!) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin))
      throw new ConfigError('CORS origins', '', `"${origin}" must be * or an origin like https://app.example`)
  }

  // Workspace lists take precedence as whole lists, not per entry: flag list, else env list, else file.
  const flagList = flags.workspace as string[] | undefined
  const envList = envValue(env, 'SERVICE_WORKSPACES', envSchemas.list)
  let workspaces: WorkspaceEntry[]
  if (flagList?.length)
    workspaces = resolveWorkspaces(
      flagList.map((path) => ({ path })),
      cwd,
      'command-line option --workspace',
    )
  else if (envList?.length)
    workspaces = resolveWorkspaces(
      envList.map((path) => ({ path })),
      cwd,
      'environment variable SERVICE_WORKSPACES',
    )
  else if (file.workspaces?.length) workspaces = resolveWorkspaces(file.workspaces, fileDir, configPath)
  else workspaces = resolveWorkspaces([{ path: cwd }], cwd, 'current directory')

  const flagToken = flagValue(flags, 'token', Secret)
  const envToken = envValue(env, 'SERVICE_TOKEN', Secret)
  const flagHostToken = flagValue(flags, 'host-token', Secret)
  const envHostToken = envValue(env, 'SERVICE_HOST_TOKEN', Secret)
  const credentialsPath = join(fileDir, 'credentials.json')
  const needToken = !flagToken && !envToken && !file.token
  const needHostToken = !flagHostToken && !envHostToken && !file.hostToken
  const stored =
    needToken || needHostToken
      ? loadOrCreateCredentials(credentialsPath, { token: needToken, hostToken: needHostToken })
      : { created: {} as { token?: string; hostToken?: string } }
  const [token, tokenSource] = pick<string>(
    [flagToken, 'flag'],
    [envToken, 'env'],
    [file.token, 'file'],
    [stored.created.token, 'generated'],
    [(stored as { token?: string }).token, 'stored'],
  )
  const [hostToken, hostTokenSource] = pick<string>(
    [flagHostToken, 'flag'],
    [envHostToken, 'env'],
    [file.hostToken, 'file'],
    [stored.created.hostToken, 'generated'],
    [(stored as { hostToken?: string }).hostToken, 'stored'],
  )

  return {
    configPath,
    configFileFound: fileOrNull !== null,
    host: host!,
    port: port!,
    token: token!,
    hostToken: hostToken!,
    tokenSource: tokenSource!,
    hostTokenSource: hostTokenSource!,
    generated: stored.created,
    credentialsPath,
    approval: { mode: mode!, timeoutMs: timeoutMs! },
    workspaces,
    corsOrigins: corsOrigins!,
    readOnly: readOnly!,
    dataDir: resolve(cwd, dataDirRaw!),
    logFormat: logFormat!,
    logRequests: logRequests!,
    file,
    unknownKeys,
    sidecar: resolveSidecarConfig(file, workspaces, env, configPath, fileDir),
    files: resolveFilesSettings(file, env),
  }
}
