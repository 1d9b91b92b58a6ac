/**
 * The program: parse flags, load configuration, start one surface, print the listening line,
 * and stop gracefully on SIGINT/SIGTERM. Returns the process exit code instead of exiting, so
 * tests can drive it.
 * @module
 */
import { parseServerFlags, UsageError, type Mode } from './cli-flags.ts'
import { helpText } from './help-text.ts'
import { bufferedStderr, createLogger, type Logger } from './core/logger.ts'
import { ConfigError, isLoopbackHost, type Env } from './core/settings.ts'
import type { Surface } from './core/surface.ts'
import { loadRequestLimits, type RequestLimits } from './core/request-limits.ts'
import { consoleUrl } from './console/console-url.ts'
import { serve, startupFinished, type Listener } from './serve.ts'
import { VERSION } from './version.ts'

/** First arguments that select the host CLI (talking to a running server) instead of serving. */
const HOST_COMMANDS = ['approvals', 'tokens']

/** Process-level hooks, injectable for tests. */
export interface MainIo {
  env: Env
  cwd: string
  stdout(line: string): void
  stderr(line: string): void
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
  stopSignal: Promise<string>
}

/** Grace period for shutdown before we give up waiting (issue requirement: within 2 s). */
const SHUTDOWN_DEADLINE_MS = 1500

/** Formats a URL host, bracketing IPv6 literals. */
function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

async function startSurface(
  mode: Mode,
  flags: Record<string, unknown>,
  io: MainIo,
  logger: (format: 'pretty' | 'json') => Logger,
): Promise<{ surface: Surface; host: string; port: number; cors: string[]; log: Logger }> {
  // Each mode loads only its own surface: the other's code (and its dependencies) would cost start
  // time and resident memory for nothing.
  if (mode === 'control-plane') {
    const { loadControlPlaneConfig } = await import('./control-plane/config.ts')
    const { createControlPlaneApp } = await import('./control-plane/app.ts')
    const config = loadControlPlaneConfig(flags as never, io.env, io.cwd)
    const log = logger(config.logFormat)
    const surface = await createControlPlaneApp(config, { logger: log })
    return { surface, host: config.host, port: config.port, cors: config.corsOrigins, log }
  }
  const { loadWorkspaceConfig } = await import('./workspace/config/server-config.ts')
  const { createWorkspaceApp } = await import('./workspace/app.ts')
  const config = loadWorkspaceConfig(flags as never, io.env, io.cwd)
  const log = logger(config.logFormat)
  if (config.unknownKeys.length)
    log.warn('unknown keys in config file ignored', { file: config.configPath, keys: config.unknownKeys })
  if (config.approval.mode === 'auto' && !config.readOnly)
    log.warn('approval mode is auto: writes are applied without asking the host (not gated); for development only')
  const surface = await createWorkspaceApp(config, { logger: log })
  return { surface, host: config.host, port: config.port, cors: config.corsOrigins, log }
}

/** Runs the server until a stop signal; returns the exit code. */
export async function main(argv: string[], io: MainIo): Promise<number> {
  if (HOST_COMMANDS.includes(argv[0] ?? '')) {
    startupFinished()
    const { runHostCli } = await import('./workspace/access/host-cli.ts')
    return runHostCli(argv, io)
  }
  if (argv[0] === 'org' && argv[1] === 'token') {
    startupFinished()
    const { runOrgTokenCli } = await import('./org-token-cli.ts')
    return runOrgTokenCli(argv, io)
  }
  if (argv[0] === 'control-plane') {
    startupFinished()
    const { runControlPlaneCli } = await import('./control-plane/copy-database.ts')
    return runControlPlaneCli(argv, io)
  }
  let mode: Mode
  let flags: Record<string, unknown>
  try {
    ;({ mode, flags } = parseServerFlags(argv))
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`service-server: ${error.message}`)
      return 2
    }
    throw error
  }
  if (flags.help) {
    io.stdout(helpText(VERSION, flags.mode === undefined ? undefined : mode))
    return 0
  }
  if (flags.version) {
    io.stdout(VERSION)
    return 0
  }

  let limits: RequestLimits
  try {
    limits = loadRequestLimits(io.env)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    io.stderr(`service-server: ${error.message}`)
    return 2
  }

  const stderr = bufferedStderr()
  const makeLogger = (format: 'pretty' | 'json') => createLogger({ format, write: stderr.write })
  let started
  try {
    started = await startSurface(mode, flags, io, makeLogger)
  } catch (error) {
    stderr.flush()
    // ConfigError and start-up failures that name a setting (an unreachable database) exit 2.
    if (error instanceof ConfigError || (error as { exitCode?: unknown } | null)?.exitCode === 2) {
      io.stderr(`service-server: ${(error as Error).message}`)
      return 2
    }
    io.stderr(`service-server: failed to start: ${(error as Error).message}`)
    return 1
  }
  const { surface, host, cors, log } = started
  if (cors.includes('*') && !isLoopbackHost(host)) {
    log.warn(
      'CORS allows any origin (*) while listening on a non-loopback address; any web page can call this server with a stolen token',
      { host },
    )
  }

  let listener: Listener
  try {
    listener = await serve({ host, port: started.port, fetch: surface.fetch, direct: surface.direct, limits })
  } catch (error) {
    await surface.close()
    stderr.flush()
    io.stderr(`service-server: cannot listen on ${host}:${started.port}: ${(error as Error).message}`)
    return 1
  }
  io.stdout(`service-server ${VERSION} ${mode} listening on http://${urlHost(host)}:${listener.port}`)
  for (const line of surface.onListening?.({ host, port: listener.port }) ?? []) io.stdout(line)
  // Workspace mode prints its console link (with a one-time code) among its own lines; the control
  // plane's console signs in with an account, so its line is the bare address.
  if (mode === 'control-plane') io.stdout(`console: ${consoleUrl({ host, port: listener.port })}`)

  const signal = await io.stopSignal
  log.info('stopping', { signal })
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_DEADLINE_MS))
  // Writes waiting on the host are answered (and recorded) while their connections are open.
  await Promise.race([surface.beginStop?.().catch((error) => log.warn('shutdown step failed', { error })), deadline])
  // Streams first (so the listener has nothing to wait on), then the listener, then storage.
  surface.streams.closeAll()
  await Promise.race([
    (async () => {
      await listener.stop()
      await surface.close()
    })(),
    deadline,
  ])
  log.info('stopped')
  stderr.flush()
  return 0
}
