/**
 * Whether and where `GET /metrics` is served: `SERVICE_METRICS`, `SERVICE_METRICS_TOKEN`,
 * `SERVICE_METRICS_LISTEN`, or the config file's `metrics` key (both modes). Off by default.
 * @module
 */
import * as v from 'valibot'
import { ConfigError, type Env, envSchemas, envValue } from './settings.ts'

/** Resolved metrics settings. */
export interface MetricsSettings {
  enabled: boolean
  /** When set, a scrape must send `Authorization: Bearer <token>`. */
  token?: string
  /** When set, `/metrics` is served on this address only, not on the main listener. */
  listen?: { host: string; port: number }
}

const TOKEN = v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))
const LISTEN = v.pipe(
  v.string(),
  v.regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port (IPv6 in brackets)'),
)

/** The config file's `metrics` key (same in both modes). */
export const MetricsFileSchema = v.strictObject({
  enabled: v.optional(v.boolean('must be true or false')),
  token: v.optional(TOKEN),
  listen: v.optional(LISTEN),
})

/** The `metrics` key as read from a config file. */
export type MetricsFileKeys = v.InferOutput<typeof MetricsFileSchema>

function parseListen(text: string, source: string): { host: string; port: number } {
  const at = text.lastIndexOf(':')
  const host = text.slice(0, at).replace(/^\[(.*)\]$/, '$1')
  const port = Number(text.slice(at + 1))
  if (!Number.isInteger(port) || port > 65535) throw new ConfigError(source, '', 'port must be 0-65535')
  return { host, port }
}

/**
 * Env over file over default (off). Setting a token or a listen address alone does not turn
 * metrics on: `SERVICE_METRICS=1` (or `metrics.enabled`) does.
 */
export function loadMetricsSettings(env: Env, file: MetricsFileKeys | undefined): MetricsSettings {
  const enabled = envValue(env, 'SERVICE_METRICS', envSchemas.bool) ?? file?.enabled ?? false
  const token = envValue(env, 'SERVICE_METRICS_TOKEN', TOKEN) ?? file?.token
  const listenEnv = envValue(env, 'SERVICE_METRICS_LISTEN', LISTEN)
  const listenText = listenEnv ?? file?.listen
  const listen =
    listenText === undefined
      ? undefined
      : parseListen(
          listenText,
          listenEnv !== undefined ? 'environment variable SERVICE_METRICS_LISTEN' : 'metrics.listen',
        )
  return { enabled, ...(token ? { token } : {}), ...(listen ? { listen } : {}) }
}
