/**
 * Settings of the asynchronous families (durable jobs, Workers, connectors): the config-file
 * schemas for the `jobs`, `workers` and `connectors` keys and their resolution with environment
 * overrides and defaults. Every window is configurable so tests run in seconds.
 * @module
 */
import { join } from 'node:path'
import * as v from 'valibot'
import { ConfigError, envSchemas, envValue, type Env } from '../../core/settings.ts'
import type { JobRunnerSettings } from './job-runner.ts'

const ms = (min: number) =>
  v.pipe(
    v.number('must be a number of milliseconds'),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}`),
  )
const count = v.pipe(
  v.number(),
  v.integer('must be a whole number'),
  v.minValue(1, 'must be at least 1'),
  v.maxValue(100, 'must be at most 100'),
)
const httpUrl = v.pipe(v.string(), v.regex(/^https?:\/\/[^\s]+$/, 'must be an http(s) URL'))

/** `jobs` in the control-plane config file. */
export const JobsFileSchema = v.strictObject({
  pollIntervalMs: v.optional(ms(10)),
  leaseMs: v.optional(ms(100)),
  retryBaseMs: v.optional(ms(1)),
  retryCapMs: v.optional(ms(1)),
  concurrency: v.optional(count),
  stopGraceMs: v.optional(ms(0)),
})

const filePath = v.pipe(v.string(), v.minLength(1))

/** `workers.container` in the control-plane config file (the `container` provisioner). */
export const ContainerFileSchema = v.strictObject({
  engine: v.optional(
    v.pipe(v.string(), v.regex(/^(unix|tcp|https?):\/\/\S+$/, 'must be unix://, tcp:// or http(s):// URL')),
  ),
  tls: v.optional(v.strictObject({ ca: v.optional(filePath), cert: v.optional(filePath), key: v.optional(filePath) })),
  image: v.optional(v.pipe(v.string(), v.minLength(1))),
  network: v.optional(v.pipe(v.string(), v.minLength(1))),
  memoryMb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(64, 'must be at least 64'))),
  cpus: v.optional(v.pipe(v.number(), v.minValue(0.1, 'must be at least 0.1'))),
  pidsLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16, 'must be at least 16'))),
  checkIntervalMs: v.optional(ms(50)),
  controlPlaneUrl: v.optional(httpUrl),
})

/** `workers` in the control-plane config file. */
export const WorkersFileSchema = v.strictObject({
  container: v.optional(ContainerFileSchema),
  heartbeatIntervalMs: v.optional(ms(50)),
  staleAfterMs: v.optional(ms(100)),
  provisioningDeadlineMs: v.optional(ms(100)),
  sweepIntervalMs: v.optional(ms(20)),
  maxAttempts: v.optional(count),
  instanceHeartbeatMs: v.optional(ms(50)),
  instanceStaleAfterMs: v.optional(ms(200)),
  runtimeCheckIntervalMs: v.optional(ms(20)),
  publicUrl: v.optional(httpUrl),
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1))),
})

/** `connectors` in the control-plane config file. */
export const ConnectorsFileSchema = v.strictObject({
  githubApiUrl: v.optional(httpUrl),
  allowFileUrls: v.optional(v.boolean('must be true or false')),
  syncDeadlineMs: v.optional(ms(100)),
  discoveryDeadlineMs: v.optional(ms(100)),
  maxAttempts: v.optional(count),
  maxItems: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000))),
  maxFileBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16 * 1024 * 1024))),
  gitCommand: v.optional(v.pipe(v.string(), v.minLength(1))),
})

/** Worker settings. */
export interface WorkerSettings {
  heartbeatIntervalMs: number
  staleAfterMs: number
  provisioningDeadlineMs: number
  sweepIntervalMs: number
  maxAttempts: number
  /** How often this control plane renews its row in `control_plane_instance`. */
  instanceHeartbeatMs: number
  /** An instance whose heartbeat is older than this is gone; its Workers are taken over. */
  instanceStaleAfterMs: number
  /** How often this control plane checks that each runtime it holds should still run. */
  runtimeCheckIntervalMs: number
  /** URL runtimes use to reach this control plane; null = the address it listens on. */
  publicUrl: string | null
  /** Where the `process` provisioner puts each Worker's directory. */
  dataDir: string
  /** The `container` provisioner; null (not offered) unless an engine is configured. */
  container: ContainerSettings | null
}

/** `workers.container.*` settings. */
export interface ContainerSettings {
  /** Engine endpoint: `unix:///run/podman/podman.sock`, `tcp://host:2376`. */
  engine: string
  /** CA, certificate and key files for a TLS TCP endpoint. */
  tls: { ca?: string; cert?: string; key?: string } | null
  image: string
  /** `host` (the runtime shares the host's network) or a network mode with ports published on 127.0.0.1. */
  network: string
  memoryMb: number
  cpus: number
  pidsLimit: number
  /** How often running containers are checked (exits, engine reachability). */
  checkIntervalMs: number
  /** URL the runtime reports heartbeats to, as seen from inside the container; null = the control plane's. */
  controlPlaneUrl: string | null
}

/** Connector settings. */
export interface ConnectorSettings {
  githubApiUrl: string
  /** Let `git` targets use file:// URLs and local paths (off by default: they read this host's disk). */
  allowFileUrls: boolean
  syncDeadlineMs: number
  discoveryDeadlineMs: number
  maxAttempts: number
  maxItems: number
  maxFileBytes: number
  gitCommand: string
}

/** Everything the asynchronous families read. */
export interface AsyncSettings {
  jobs: JobRunnerSettings
  workers: WorkerSettings
  connectors: ConnectorSettings
}

/** The parsed `jobs`/`workers`/`connectors` keys of the config file. */
export interface AsyncFileKeys {
  jobs?: v.InferOutput<typeof JobsFileSchema>
  workers?: v.InferOutput<typeof WorkersFileSchema>
  connectors?: v.InferOutput<typeof ConnectorsFileSchema>
}

/** Resolves settings: env > file > default. */
export function resolveAsyncSettings(file: AsyncFileKeys, env: Env, dataDir: string): AsyncSettings {
  const jobs = file.jobs ?? {}
  const workers = file.workers ?? {}
  const connectors = file.connectors ?? {}
  const publicUrl = env.SERVICE_CONTROL_PLANE_PUBLIC_URL || workers.publicUrl || null
  if (publicUrl && !/^https?:\/\/[^\s]+$/.test(publicUrl))
    throw new ConfigError('SERVICE_CONTROL_PLANE_PUBLIC_URL', '', 'must be an http(s) URL')
  const githubApiUrl = env.SERVICE_GITHUB_API_URL || connectors.githubApiUrl || 'https://api.github.com'
  if (!/^https?:\/\/[^\s]+$/.test(githubApiUrl))
    throw new ConfigError('SERVICE_GITHUB_API_URL', '', 'must be an http(s) URL')
  const retryBaseMs = jobs.retryBaseMs ?? 2000
  const instanceHeartbeatMs = workers.instanceHeartbeatMs ?? 5000
  const instanceStaleAfterMs = workers.instanceStaleAfterMs ?? 30_000
  // One late beat must not make a live instance look gone (its Workers would be taken over).
  if (instanceStaleAfterMs < 2 * instanceHeartbeatMs)
    throw new ConfigError(
      'the config file',
      'workers.instanceStaleAfterMs',
      'must be at least twice workers.instanceHeartbeatMs',
    )
  return {
    jobs: {
      pollIntervalMs: jobs.pollIntervalMs ?? 1000,
      leaseMs: jobs.leaseMs ?? 30_000,
      backoff: { baseMs: retryBaseMs, capMs: Math.max(retryBaseMs, jobs.retryCapMs ?? 15 * 60_000), jitter: 0.2 },
      concurrency: jobs.concurrency ?? 2,
      stopGraceMs: jobs.stopGraceMs ?? 1000,
    },
    workers: {
      heartbeatIntervalMs: workers.heartbeatIntervalMs ?? 10_000,
      staleAfterMs: workers.staleAfterMs ?? 45_000,
      provisioningDeadlineMs: workers.provisioningDeadlineMs ?? 60_000,
      sweepIntervalMs: workers.sweepIntervalMs ?? 5_000,
      maxAttempts: workers.maxAttempts ?? 3,
      instanceHeartbeatMs,
      instanceStaleAfterMs,
      runtimeCheckIntervalMs: workers.runtimeCheckIntervalMs ?? 250,
      publicUrl: publicUrl ? publicUrl.replace(/\/+$/, '') : null,
      dataDir: workers.dataDir ?? join(dataDir, 'workers'),
      container: resolveContainerSettings(workers.container ?? {}, env),
    },
    connectors: {
      githubApiUrl: githubApiUrl.replace(/\/+$/, ''),
      allowFileUrls:
        envValue(env, 'SERVICE_CONNECTORS_ALLOW_FILE_URLS', envSchemas.bool) ?? connectors.allowFileUrls ?? false,
      syncDeadlineMs: connectors.syncDeadlineMs ?? 10 * 60_000,
      discoveryDeadlineMs: connectors.discoveryDeadlineMs ?? 2 * 60_000,
      maxAttempts: connectors.maxAttempts ?? 4,
      maxItems: connectors.maxItems ?? 5000,
      maxFileBytes: connectors.maxFileBytes ?? 1024 * 1024,
      gitCommand: connectors.gitCommand ?? 'git',
    },
  }
}

/** `workers.container.*` with `SERVICE_WORKERS_CONTAINER_ENGINE` / `…_IMAGE` overrides; null without an engine. */
function resolveContainerSettings(file: v.InferOutput<typeof ContainerFileSchema>, env: Env): ContainerSettings | null {
  const engine = env.SERVICE_WORKERS_CONTAINER_ENGINE || file.engine
  if (!engine) return null
  if (!/^(unix|tcp|https?):\/\/\S+$/.test(engine))
    throw new ConfigError('SERVICE_WORKERS_CONTAINER_ENGINE', '', 'must be a unix://, tcp:// or http(s):// URL')
  return {
    engine,
    tls: file.tls ?? null,
    image: env.SERVICE_WORKERS_CONTAINER_IMAGE || file.image || 'localhost/service-server:latest',
    network: file.network ?? 'host',
    memoryMb: file.memoryMb ?? 1024,
    cpus: file.cpus ?? 1,
    pidsLimit: file.pidsLimit ?? 512,
    checkIntervalMs: file.checkIntervalMs ?? 5000,
    controlPlaneUrl: file.controlPlaneUrl?.replace(/\/+$/, '') ?? null,
  }
}
