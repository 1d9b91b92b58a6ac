/**
 * Control-plane configuration: flags > `SERVICE_*` env > optional config file > defaults.
 * The control plane keeps its state in SQLite under the data dir (or `--database`).
 * @module
 */
import { dirname, join, resolve } from 'node:path'
import * as v from 'valibot'
import type { Flags } from '../cli-flags.ts'
import { defaultDataDir, envSchemas, envValue, flagValue, pick, readConfigFile, ConfigError, type Env } from '../core/settings.ts'

/** Keys of the optional control-plane config file. */
export const ControlPlaneFileSchema = v.looseObject({
  host: v.optional(v.pipe(v.string(), v.minLength(1))),
  port: v.optional(v.pipe(v.number('must be a number'), v.integer(), v.minValue(0), v.maxValue(65535, 'must be 0-65535'))),
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1))),
  database: v.optional(v.pipe(v.string(), v.minLength(1))),
  corsOrigins: v.optional(v.array(v.pipe(v.string(), v.regex(/^(\*|https?:\/\/[^/\s]+)$/, 'must be * or an origin like https://app.example')))),
  logFormat: v.optional(envSchemas.logFormat),
  logRequests: v.optional(v.boolean('must be true or false')),
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
  corsOrigins: string[]
  logFormat: 'pretty' | 'json'
  logRequests: boolean
  /** The whole parsed file (or `{}`), for feature-specific keys. */
  file: ControlPlaneFile
  env: Env
}

/** Resolves the control-plane configuration; throws ConfigError on invalid input. */
export function loadControlPlaneConfig(flags: Flags, env: Env, cwd: string): ControlPlaneConfig {
  const explicit = (flags.config as string | undefined) ?? env.SERVICE_CONTROL_PLANE_CONFIG
  const configPath = explicit ? resolve(cwd, explicit) : null
  const fileOrNull = configPath ? readConfigFile(configPath, ControlPlaneFileSchema) : null
  if (configPath && fileOrNull === null) throw new ConfigError(configPath, '', 'file does not exist')
  const file: ControlPlaneFile = fileOrNull ?? {}
  const fileDir = configPath ? dirname(configPath) : cwd

  const [host] = pick<string>([flagValue(flags, 'host', v.pipe(v.string(), v.minLength(1))), 'flag'], [env.SERVICE_HOST || undefined, 'env'], [file.host, 'file'], ['127.0.0.1', 'default'])
  const [port] = pick<number>([flagValue(flags, 'port', envSchemas.port), 'flag'], [envValue(env, 'SERVICE_PORT', envSchemas.port), 'env'], [file.port, 'file'], [8790, 'default'])
  const [dataDir] = pick<string>([flags['data-dir'] as string | undefined, 'flag'], [env.SERVICE_DATA_DIR || undefined, 'env'], [file.dataDir ? resolve(fileDir, file.dataDir) : undefined, 'file'], [defaultDataDir(env), 'default'])
  const [database] = pick<string>([flags.database as string | undefined, 'flag'], [env.SERVICE_DATABASE || undefined, 'env'], [file.database ? resolve(fileDir, file.database) : undefined, 'file'])
  const [corsOrigins] = pick<string[]>([flagValue(flags, 'cors', envSchemas.list), 'flag'], [envValue(env, 'SERVICE_CORS_ORIGINS', envSchemas.list), 'env'], [file.corsOrigins, 'file'], [[], 'default'])
  const [logFormat] = pick<'pretty' | 'json'>([flagValue(flags, 'log-format', envSchemas.logFormat), 'flag'], [envValue(env, 'SERVICE_LOG_FORMAT', envSchemas.logFormat), 'env'], [file.logFormat, 'file'], ['pretty', 'default'])
  const [logRequests] = pick<boolean>([envValue(env, 'SERVICE_LOG_REQUESTS', envSchemas.bool), 'env'], [file.logRequests, 'file'], [true, 'default'])
  const absoluteDataDir = resolve(cwd, dataDir!)
  return {
    configPath,
    host: host!,
    port: port!,
    dataDir: absoluteDataDir,
    databasePath: database ? (database === ':memory:' ? database : resolve(cwd, database)) : join(absoluteDataDir, 'control-plane.sqlite'),
    corsOrigins: corsOrigins!,
    logFormat: logFormat!,
    logRequests: logRequests!,
    file,
    env,
  }
}
