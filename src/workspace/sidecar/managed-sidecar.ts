/**
 * A sidecar process the server starts itself (`<bin> serve --port 0 --hostname 127.0.0.1`).
 *
 * Users could not get the engine running by hand (#121, #91, #97: missing PATH, "exited with status
 * 0", wrong port), so when the configuration names a binary we own its life: a fresh random
 * password per start (given to the child in `OPENCODE_SERVER_PASSWORD`, never to clients), a
 * loopback-only port it reports on stdout, a health wait, restarts with capped exponential backoff
 * when it dies, and a prompt stop on shutdown.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import type { Logger } from '../../core/logger.ts'
import { generateToken } from '../../core/secrets.ts'
import { basicAuthorization } from './header-policy.ts'
import { DEFAULT_SIDECAR_USERNAME, type ManagedSidecarSettings } from '../config/sidecar-config.ts'

/** Backoff between restarts: 0.5 s doubling up to 30 s; reset after a minute of healthy running. */
export const RESTART_BACKOFF = { initialMs: 500, maxMs: 30_000, resetAfterMs: 60_000 }
const STOP_GRACE_MS = 1000

/** The managed process's public state. */
export interface ManagedState {
  state: 'starting' | 'running' | 'restarting' | 'stopped'
  pid: number | null
  restarts: number
  lastExit: { code: number | null; signal: string | null; at: string } | null
}

/** Runs and supervises one sidecar process. */
export class ManagedSidecar {
  readonly username = DEFAULT_SIDECAR_USERNAME
  #password = generateToken('', 24)
  #baseUrl: string | null = null
  #child: ChildProcess | null = null
  #stopping = false
  #attempt = 0
  #restarts = 0
  #restartTimer: ReturnType<typeof setTimeout> | undefined
  #state: ManagedState['state'] = 'stopped'
  #lastExit: ManagedState['lastExit'] = null
  #healthyAt = 0
  #stderrTail = ''
  #listeners = new Set<() => void>()

  constructor(
    private readonly settings: ManagedSidecarSettings,
    private readonly options: { log: Logger; cwd: string },
  ) {}

  /** `http://127.0.0.1:<port>` once healthy, else null. */
  get baseUrl(): string | null {
    return this.#baseUrl
  }

  /** The password of the current process (changes on every start). */
  get password(): string {
    return this.#password
  }

  /** Status without secrets. */
  get status(): ManagedState {
    return { state: this.#state, pid: this.#child?.pid ?? null, restarts: this.#restarts, lastExit: this.#lastExit }
  }

  /** Calls `listener` whenever the base URL changes (start, exit, restart). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Starts the process and resolves once it is healthy (true) or the first attempt failed (false; restarts continue). */
  start(): Promise<boolean> {
    this.#stopping = false
    return this.#launch()
  }

  #changed(): void {
    for (const listener of this.#listeners) {
      try {
        listener()
      } catch {
        /* listeners must not break supervision */
      }
    }
  }

  #launch(): Promise<boolean> {
    this.#password = generateToken('', 24)
    this.#state = this.#restarts > 0 ? 'restarting' : 'starting'
    const args = ['serve', '--port', '0', '--hostname', '127.0.0.1', ...this.settings.args]
    let child: ChildProcess
    try {
      child = spawn(this.settings.bin, args, {
        cwd: this.options.cwd,
        env: {
          ...sidecarEnvironment(process.env),
          ...this.settings.env,
          OPENCODE_SERVER_PASSWORD: this.#password,
          OPENCODE_SERVER_USERNAME: this.username,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    } catch (error) {
      this.options.log.error('managed sidecar failed to spawn', {
        bin: this.settings.bin,
        error: (error as Error).message,
      })
      this.#scheduleRestart()
      return Promise.resolve(false)
    }
    this.#child = child
    // Last resort if the process exits without a graceful close: never leave the sidecar running.
    const killOnExit = () => {
      try {
        child.kill('SIGKILL')
      } catch {
        /* already gone */
      }
    }
    process.once('exit', killOnExit)
    child.once('exit', () => process.removeListener('exit', killOnExit))
    child.once('error', () => process.removeListener('exit', killOnExit))
    this.#stderrTail = ''
    child.stderr!.on('data', (d) => {
      this.#stderrTail = (this.#stderrTail + String(d)).slice(-2000)
    })
    return new Promise<boolean>((resolve) => {
      let settled = false
      const settle = (ok: boolean) => {
        if (!settled) {
          settled = true
          clearTimeout(deadline)
          resolve(ok)
        }
      }
      const deadline = setTimeout(() => {
        this.options.log.error('managed sidecar did not become healthy in time', {
          bin: this.settings.bin,
          timeoutMs: this.settings.startTimeoutMs,
          stderr: this.#stderrTail.slice(-500),
        })
        child.kill('SIGKILL')
        settle(false)
      }, this.settings.startTimeoutMs)
      let buffered = ''
      child.stdout!.on('data', (d) => {
        buffered += String(d)
        const match = /listening on (http:\/\/[^\s]+)/.exec(buffered)
        if (!match || this.#baseUrl || settled) {
          if (buffered.length > 8192) buffered = buffered.slice(-4096)
          return
        }
        const url = match[1]!.replace(/\/+$/, '')
        void this.#waitHealthy(url, child).then((ok) => {
          if (!ok || child !== this.#child || this.#stopping) return settle(false)
          this.#baseUrl = url
          this.#state = 'running'
          this.#healthyAt = performance.now()
          this.options.log.info('managed sidecar running', { pid: child.pid, baseUrl: url, restarts: this.#restarts })
          this.#changed()
          settle(true)
        })
      })
      // A missing or non-executable binary emits 'error' and possibly no 'exit': treat it as one.
      child.once('error', (error) => {
        this.options.log.error('managed sidecar failed to start', { bin: this.settings.bin, error: error.message })
        settle(false)
        this.#onExit(child, null, null)
      })
      child.once('exit', (code, signal) => {
        settle(false)
        this.#onExit(child, code, signal)
      })
    })
  }

  async #waitHealthy(url: string, child: ChildProcess): Promise<boolean> {
    const authorization = basicAuthorization(this.username, this.#password)!
    const until = performance.now() + this.settings.startTimeoutMs
    while (performance.now() < until && child.exitCode === null && !this.#stopping) {
      try {
        const response = await fetch(`${url}/global/health`, {
          headers: { authorization },
          signal: AbortSignal.timeout(2000),
        })
        await response.body?.cancel()
        if (response.ok) return true
      } catch {
        /* not up yet */
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    return false
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.#child) return
    this.#child = null
    this.#lastExit = { code, signal, at: new Date().toISOString() }
    const wasUp = this.#baseUrl !== null
    this.#baseUrl = null
    if (wasUp) this.#changed()
    if (this.#stopping) {
      this.#state = 'stopped'
      return
    }
    this.options.log.warn('managed sidecar exited', { code, signal, stderr: this.#stderrTail.slice(-500) })
    if (wasUp && performance.now() - this.#healthyAt > RESTART_BACKOFF.resetAfterMs) this.#attempt = 0
    this.#scheduleRestart()
  }

  /** The delay before restart attempt `attempt` (0-based). Exported logic for tests via {@link restartDelayMs}. */
  #scheduleRestart(): void {
    if (this.#stopping) return
    const delay = restartDelayMs(this.#attempt++)
    this.#state = 'restarting'
    this.#restartTimer = setTimeout(() => {
      this.#restarts++
      void this.#launch()
    }, delay)
  }

  /** Stops the process: SIGTERM, then SIGKILL after a short grace. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopping = true
    clearTimeout(this.#restartTimer)
    const child = this.#child
    this.#baseUrl = null
    this.#state = 'stopped'
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGTERM')
    const grace = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), STOP_GRACE_MS))
    if ((await Promise.race([exited, grace])) === 'late') {
      child.kill('SIGKILL')
      await exited
    }
  }
}

/** Capped exponential backoff for restart attempt `attempt` (0-based). */
export function restartDelayMs(attempt: number): number {
  return Math.min(RESTART_BACKOFF.maxMs, RESTART_BACKOFF.initialMs * 2 ** Math.min(attempt, 30))
}

/**
 * Our environment minus our own settings: `SERVICE_*` variables can hold the client and host tokens
 * and the sidecar password, and the sidecar runs agent tools that can read their environment.
 */
export function sidecarEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !name.startsWith('SERVICE_')) out[name] = value
  }
  return out
}
