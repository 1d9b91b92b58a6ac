/**
 * Limits and switches of the file data plane (file sessions, inbox, outbox): config keys
 * `files.*`, `inbox.*`, `outbox.*`, with environment overrides for the inbox and outbox as the
 * reference has them. Invalid values stop start-up like every other config key.
 * @module
 */
import * as v from 'valibot'
import { ConfigError, envSchemas, envValue, type Env } from '../../core/settings.ts'

const Int = (min: number, max: number) =>
  v.pipe(
    v.number('must be a number'),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  )

/** `files`, `inbox` and `outbox` in the config file. */
export const FilesFileSchema = {
  files: v.optional(
    v.object(
      {
        maxBatchItems: v.optional(Int(1, 1000)),
        maxFileBytes: v.optional(Int(1, 1024 * 1024 * 1024)),
        maxSessions: v.optional(Int(1, 100_000)),
        defaultTtlSeconds: v.optional(Int(30, 86_400)),
        catalogEventRetention: v.optional(Int(100, 1_000_000)),
        watchDebounceMs: v.optional(Int(10, 60_000)),
        readCacheBytes: v.optional(Int(0, 1024 * 1024 * 1024)),
      },
      'must be an object',
    ),
  ),
  inbox: v.optional(
    v.object(
      {
        enabled: v.optional(v.boolean('must be true or false')),
        maxBytes: v.optional(Int(1, Number.MAX_SAFE_INTEGER)),
        requireApproval: v.optional(v.boolean('must be true or false')),
      },
      'must be an object',
    ),
  ),
  outbox: v.optional(v.object({ enabled: v.optional(v.boolean('must be true or false')) }, 'must be an object')),
}

/** The resolved settings. */
export interface FilesSettings {
  maxBatchItems: number
  maxFileBytes: number
  maxSessions: number
  defaultTtlMs: number
  minTtlMs: number
  maxTtlMs: number
  catalogEventRetention: number
  watchDebounceMs: number
  /** Bound on the base64 held by the read-batch content cache; 0 turns it off. */
  readCacheBytes: number
  inbox: { enabled: boolean; maxBytes: number; requireApproval: boolean }
  outbox: { enabled: boolean }
}

/** Defaults (the reference's constants, except the inbox size; see docs/workspace-api.md). */
export const FILES_DEFAULTS: FilesSettings = {
  maxBatchItems: 64,
  maxFileBytes: 5_000_000,
  maxSessions: 256,
  defaultTtlMs: 15 * 60_000,
  minTtlMs: 30_000,
  maxTtlMs: 24 * 3_600_000,
  catalogEventRetention: 10_000,
  watchDebounceMs: 100,
  // Sized for a desktop server: it holds at most this much base64 (a file up to 768 KiB may enter).
  // A server that batches large files for many clients can raise it.
  readCacheBytes: 8 * 1024 * 1024,
  inbox: { enabled: true, maxBytes: 250_000_000, requireApproval: true },
  outbox: { enabled: true },
}

type FileKeys = {
  files?: Record<string, number | undefined>
  inbox?: { enabled?: boolean; maxBytes?: number; requireApproval?: boolean }
  outbox?: { enabled?: boolean }
}

/** Resolves the settings: env > file > default. */
export function resolveFilesSettings(file: FileKeys, env: Env): FilesSettings {
  const f = file.files ?? {}
  const maxBytesEnv = envValue(env, 'SERVICE_INBOX_MAX_BYTES', envSchemas.positiveInt)
  const settings: FilesSettings = {
    maxBatchItems: f.maxBatchItems ?? FILES_DEFAULTS.maxBatchItems,
    maxFileBytes: f.maxFileBytes ?? FILES_DEFAULTS.maxFileBytes,
    maxSessions: f.maxSessions ?? FILES_DEFAULTS.maxSessions,
    defaultTtlMs: (f.defaultTtlSeconds ?? FILES_DEFAULTS.defaultTtlMs / 1000) * 1000,
    minTtlMs: FILES_DEFAULTS.minTtlMs,
    maxTtlMs: FILES_DEFAULTS.maxTtlMs,
    catalogEventRetention: f.catalogEventRetention ?? FILES_DEFAULTS.catalogEventRetention,
    watchDebounceMs: f.watchDebounceMs ?? FILES_DEFAULTS.watchDebounceMs,
    readCacheBytes: f.readCacheBytes ?? FILES_DEFAULTS.readCacheBytes,
    inbox: {
      enabled:
        envValue(env, 'SERVICE_INBOX_ENABLED', envSchemas.bool) ?? file.inbox?.enabled ?? FILES_DEFAULTS.inbox.enabled,
      maxBytes: maxBytesEnv ?? file.inbox?.maxBytes ?? FILES_DEFAULTS.inbox.maxBytes,
      requireApproval: file.inbox?.requireApproval ?? FILES_DEFAULTS.inbox.requireApproval,
    },
    outbox: {
      enabled:
        envValue(env, 'SERVICE_OUTBOX_ENABLED', envSchemas.bool) ??
        file.outbox?.enabled ??
        FILES_DEFAULTS.outbox.enabled,
    },
  }
  if (!Number.isSafeInteger(settings.inbox.maxBytes) || settings.inbox.maxBytes < 1)
    throw new ConfigError('SERVICE_INBOX_MAX_BYTES', '', 'must be a positive whole number')
  return settings
}
