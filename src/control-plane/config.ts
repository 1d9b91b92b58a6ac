/**
 * Control-plane configuration: flags > `SERVICE_*` env > optional config file > defaults.
 * The control plane keeps its state in SQLite under the data dir (or `--database`), or in
 * PostgreSQL when a `postgres://` URL is given (`--database-url`, `SERVICE_DATABASE_URL`, `databaseUrl`).
 * @module
 */
import { dirname, join, resolve } from 'node:path'
import * as v from 'valibot'
import { MetricsFileSchema } from '../core/metrics-settings.ts'
import type { Flags } from '../cli-flags.ts'
import { SkillLimitsFileSchema } from '../opencode/skill-wire.ts'
import { McpFileSchema } from './mcp/mcp-settings.ts'
import { RateLimitFileSchema } from './rate-limit/rate-limit-settings.ts'
import { ConnectorsFileSchema, JobsFileSchema, WorkersFileSchema } from './jobs/async-settings.ts'
import {
  defaultDataDir,
  envSchemas,
  envValue,
  flagValue,
  missingConfigFile,
  pick,
  readConfigFile,
  ConfigError,
  type Env,
  serverSettings,
} from '../core/settings.ts'

/** Keys of the optional control-plane config file. */
export const ControlPlaneFileSchema = v.looseObject({
  host: v.optional(v.pipe(v.string(), v.minLength(1))),
  port: v.optional(
    v.pipe(v.number('must be a number'), v.integer(), v.minValue(0), v.maxValue(65535, 'must be 0-65535')),
  ),
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1))),
  database: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** `postgres://…`: several instances share one PostgreSQL database instead of a SQLite file. */
  databaseUrl: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//i, 'must be a postgres:// URL'))),
  /** PostgreSQL pool: connections per instance, statement timeout, connect timeout. */
  databasePool: v.optional(
    v.strictObject({
      size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(500))),
      statementTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100))),
      connectTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100))),
    }),
  ),
  corsOrigins: v.optional(
    v.array(
      v.pipe(v.string(), v.regex(/^(\*|https?:\/\/[^/\s]+)$/, 'must be * or an origin like https://app.example')),
    ),
  ),
  logFormat: v.optional(envSchemas.logFormat),
  logRequests: v.optional(v.boolean('must be true or false')),
  /** `GET /metrics` (see core/metrics-settings.ts; env SERVICE_METRICS* wins). */
  metrics: v.optional(MetricsFileSchema),
  /** Allow anyone to sign up without an invitation (the first account is always allowed). */
  openSignUp: v.optional(v.boolean('must be true or false')),
  /** Session lifetime in hours; sessions in use slide forward. */
  sessionTtlHours: v.optional(
    v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1), v.maxValue(24 * 366)),
  ),
  /** How long an Idempotency-Key and its answer are kept, in hours (default 24). */
  idempotencyKeyTtlHours: v.optional(
    v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1), v.maxValue(24 * 31)),
  ),
  /** Days an audit event is kept before the retention sweep deletes it (default 365). */
  auditRetentionDays: v.optional(
    v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1), v.maxValue(36500)),
  ),
  /** Take the client address from the first X-Forwarded-For entry (only behind a proxy you trust). */
  trustProxy: v.optional(v.boolean('must be true or false')),
  /** Durable jobs, Workers and connectors (see jobs/async-settings.ts for keys and defaults). */
  jobs: v.optional(JobsFileSchema),
  workers: v.optional(WorkersFileSchema),
  connectors: v.optional(ConnectorsFileSchema),
  /** Failed sign-in limits. */
  signInThrottle: v.optional(
    v.strictObject({
      maxFailuresPerAccount: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      maxFailuresPerAddress: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
      windowSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    }),
  ),
  /** File holding the 32-byte key that encrypts stored secrets (generated with mode 0600 if missing). */
  encryptionKeyFile: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** JSON file replacing the embedded model-provider catalog. */
  llmProviderCatalogFile: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Skill folder and zip upload limits (defaults 200 files, 5 MiB per file, 20 MiB per skill; 50 MiB zips). */
  skills: v.optional(SkillLimitsFileSchema),
  /** MCP endpoint limits (sessions, idle time, bodies, stream buffers; see mcp/mcp-settings.ts). */
  mcp: v.optional(McpFileSchema),
  /** Per-credential request rate limits (see rate-limit/rate-limit-settings.ts; env SERVICE_RATE_LIMIT* wins). */
  rateLimit: v.optional(RateLimitFileSchema),
  /** The authorization server: lifetime of the built-in clients' tokens (OpenCode, CLI, workspace link). */
  oauth: v.optional(
    v.strictObject({
      tokenTtlDays: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3660))),
      /** Seconds a device-grant client waits between polls (RFC 8628 `interval`; default 5). */
      deviceIntervalSeconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60))),
    }),
  ),
})
/** The parsed file. */
export type ControlPlaneFile = v.InferOutput<typeof ControlPlaneFileSchema>

/** Everything control-plane mode needs to start. */
export interface ControlPlaneConfig {
  configPath: string | null
  host: string
  port: number
  dataDir: string
  databasePath: string
  /** A PostgreSQL URL (with its password: never log it; see `redactDatabaseUrl`), or null for SQLite. */
  databaseUrl: string | null
  /** PostgreSQL pool settings (defaults 10 connections, 15 s statements, 5 s to connect). */
  databasePool: { size: number; statementTimeoutMs: number; connectTimeoutMs: number }
  corsOrigins: string[]
  logFormat: 'pretty' | 'json'
  logRequests: boolean
  /** Sign-up without an invitation after the first account (default false). */
  openSignUp: boolean
  /** Session lifetime in hours (default 168 = 7 days). */
  sessionTtlHours: number
  /** How long an Idempotency-Key and its answer are kept (default 24 hours). */
  idempotencyKeyTtlHours: number
  /** Days an audit event is kept (default 365). */
  auditRetentionDays: number
  /** Trust X-Forwarded-For for the client address (default false). */
  trustProxy: boolean
  /** Failed sign-in limits (defaults 5 per account, 50 per address, 900 s window). */
  signInThrottle: { maxFailuresPerAccount: number; maxFailuresPerAddress: number; windowSeconds: number }
  /** `SERVICE_ENCRYPTION_KEY` (32 bytes as base64 or hex); when set, the key file is not used. */
  encryptionKey: string | undefined
  /** Key file for stored secrets (default `<dataDir>/encryption.key`). */
  encryptionKeyFile: string
  /** A JSON catalog replacing the embedded model-provider catalog (default none). */
  llmProviderCatalogFile: string | null
  /** The whole parsed file (or `{}`), for feature-specific keys. */
  file: ControlPlaneFile
  env: Env
}

/** Resolves the control-plane configuration; throws ConfigError on invalid input. */
export function loadControlPlaneConfig(flags: Flags, env: Env, cwd: string): ControlPlaneConfig {
  const explicit = (flags.config as string | undefined) ?? env.SERVICE_CONTROL_PLANE_CONFIG
  const configPath = explicit ? resolve(cwd, explicit) : null
  const fileOrNull = configPath ? readConfigFile(configPath, ControlPlaneFileSchema) : null
  if (configPath && fileOrNull === null)
    throw missingConfigFile(configPath, flags.config !== undefined ? '--config' : 'SERVICE_CONTROL_PLANE_CONFIG')
  const file: ControlPlaneFile = fileOrNull ?? {}
  const fileDir = configPath ? dirname(configPath) : cwd

  const { host, port, corsOrigins, logFormat, logRequests } = serverSettings(flags, env, file, 8790)
  const [dataDir] = pick<string>(
    [flags['data-dir'] as string | undefined, 'flag'],
    [env.SERVICE_DATA_DIR || undefined, 'env'],
    [file.dataDir ? resolve(fileDir, file.dataDir) : undefined, 'file'],
    [defaultDataDir(env), 'default'],
  )
  const [database] = pick<string>(
    [flags.database as string | undefined, 'flag'],
    [env.SERVICE_DATABASE || undefined, 'env'],
    [file.database ? resolve(fileDir, file.database) : undefined, 'file'],
  )
  const urlSchema = v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//i, 'must be a postgres:// or postgresql:// URL'))
  const [databaseUrl] = pick<string>(
    // The URL may hold a password, so a bad value is never echoed: the schema's message names the rule.
    [flagValue(flags, 'database-url', urlSchema), 'flag'],
    [secretEnvUrl(env), 'env'],
    [file.databaseUrl, 'file'],
  )
  const pool = file.databasePool ?? {}
  const [poolSize] = pick<number>(
    [envValue(env, 'SERVICE_DATABASE_POOL_SIZE', envSchemas.positiveInt), 'env'],
    [pool.size, 'file'],
    [10, 'default'],
  )
  const [statementTimeoutMs] = pick<number>(
    [envValue(env, 'SERVICE_DATABASE_STATEMENT_TIMEOUT_MS', envSchemas.positiveInt), 'env'],
    [pool.statementTimeoutMs, 'file'],
    [15_000, 'default'],
  )
  const [openSignUp] = pick<boolean>(
    [envValue(env, 'SERVICE_OPEN_SIGN_UP', envSchemas.bool), 'env'],
    [file.openSignUp, 'file'],
    [false, 'default'],
  )
  const [sessionTtlHours] = pick<number>(
    [envValue(env, 'SERVICE_SESSION_TTL_HOURS', envSchemas.positiveInt), 'env'],
    [file.sessionTtlHours, 'file'],
    [168, 'default'],
  )
  const [idempotencyKeyTtlHours] = pick<number>(
    [envValue(env, 'SERVICE_IDEMPOTENCY_KEY_TTL_HOURS', envSchemas.positiveInt), 'env'],
    [file.idempotencyKeyTtlHours, 'file'],
    [24, 'default'],
  )
  const [auditRetentionDays] = pick<number>(
    [envValue(env, 'SERVICE_AUDIT_RETENTION_DAYS', envSchemas.positiveInt), 'env'],
    [file.auditRetentionDays, 'file'],
    [365, 'default'],
  )
  const [trustProxy] = pick<boolean>(
    [envValue(env, 'SERVICE_TRUST_PROXY', envSchemas.bool), 'env'],
    [file.trustProxy, 'file'],
    [false, 'default'],
  )
  const throttle = file.signInThrottle ?? {}
  const absoluteDataDir = resolve(cwd, dataDir!)
  const [encryptionKeyFile] = pick<string>(
    [env.SERVICE_ENCRYPTION_KEY_FILE ? resolve(cwd, env.SERVICE_ENCRYPTION_KEY_FILE) : undefined, 'env'],
    [file.encryptionKeyFile ? resolve(fileDir, file.encryptionKeyFile) : undefined, 'file'],
    [join(absoluteDataDir, 'encryption.key'), 'default'],
  )
  const [llmProviderCatalogFile] = pick<string>(
    [env.SERVICE_LLM_PROVIDER_CATALOG ? resolve(cwd, env.SERVICE_LLM_PROVIDER_CATALOG) : undefined, 'env'],
    [file.llmProviderCatalogFile ? resolve(fileDir, file.llmProviderCatalogFile) : undefined, 'file'],
  )
  return {
    configPath,
    host: host!,
    port: port!,
    dataDir: absoluteDataDir,
    databasePath: database
      ? database === ':memory:'
        ? database
        : resolve(cwd, database)
      : join(absoluteDataDir, 'control-plane.sqlite'),
    databaseUrl: databaseUrl ?? null,
    databasePool: {
      size: poolSize!,
      statementTimeoutMs: statementTimeoutMs!,
      connectTimeoutMs: pool.connectTimeoutMs ?? 5_000,
    },
    corsOrigins: corsOrigins!,
    logFormat: logFormat!,
    logRequests: logRequests!,
    openSignUp: openSignUp!,
    sessionTtlHours: sessionTtlHours!,
    idempotencyKeyTtlHours: idempotencyKeyTtlHours!,
    auditRetentionDays: auditRetentionDays!,
    trustProxy: trustProxy!,
    signInThrottle: {
      maxFailuresPerAccount: throttle.maxFailuresPerAccount ?? 5,
      maxFailuresPerAddress: throttle.maxFailuresPerAddress ?? 50,
      windowSeconds: throttle.windowSeconds ?? 900,
    },
    encryptionKey: env.SERVICE_ENCRYPTION_KEY || undefined,
    encryptionKeyFile: encryptionKeyFile!,
    llmProviderCatalogFile: llmProviderCatalogFile ?? null,
    file,
    env,
  }
}

// envValue echoes a bad value back; a database URL can hold a password, so this one only names the rule.
function secretEnvUrl(env: Env): string | undefined {
  const raw = env.SERVICE_DATABASE_URL
  if (raw === undefined || raw === '') return undefined
  if (!/^postgres(ql)?:\/\//i.test(raw)) {
    throw new ConfigError('environment variable SERVICE_DATABASE_URL', '', 'must be a postgres:// or postgresql:// URL')
  }
  return raw
}
