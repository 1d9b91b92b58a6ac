/**
 * The `process` provisioner: runs each Worker as `service-server --mode workspace`, a child
 * process of the control plane on this host, with its own directory under the Workers data dir,
 * the Worker's client and host tokens, and the settings its heartbeat reporter needs.
 *
 * Each runtime's pid is recorded in the database (with the owning instance and host, see
 * runtime-ownership.ts) and in `<dir>/runtime.pid`. A runtime left running by a control plane
 * that crashed (SIGKILL leaves children orphaned) is found through either after a restart on
 * this host and stopped ({@link ProcessProvisioner.reap}); it is recognised by its
 * `SERVICE_WORKER_ID` in `/proc/<pid>/environ`, so a reused pid is never signalled (on systems
 * without /proc it is left alone).
 *
 * The child gets an allowlisted environment (never the control plane's own secrets, such as
 * `SERVICE_ENCRYPTION_KEY`) and listens on an ephemeral loopback port; the listening line of its
 * output gives the URL. Its stdout and stderr go to `<dir>/runtime.log` (runtime-log.ts), not to
 * pipes: the output survives this control plane, is kept under a size cap, and is what
 * {@link ProcessProvisioner.logs} answers. Running from source the command is
 * `<runtime> bin/service-server.ts`; inside the compiled binary it is the binary itself.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../../core/logger.ts'
import { writeFileAtomic } from '../../storage/fs.ts'
import type { ProvisionedRuntime, ProvisionRequest, Provisioner, RuntimeExitListener } from './provisioner.ts'
import {
  appendRuntimeLog,
  openRuntimeLog,
  redactSecrets,
  rotateRuntimeLog,
  RUNTIME_LOG,
  RUNTIME_LOG_CAP_BYTES,
  tailRuntimeLog,
} from './runtime-log.ts'

/** Environment variables passed through to runtimes (everything else is withheld). */
const PASSED_ENV = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT']

/** How long a runtime may take to exit on SIGTERM before it is killed. */
const STOP_GRACE_MS = 2000

/** How often the output of held runtimes is checked against the size cap. */
const LOG_CHECK_MS = 1000

/** Starts the line the control plane adds to a runtime's log before each start. */
const START_MARK = '---'

/** How often a starting runtime's output is read for its listening line. */
const LISTEN_POLL_MS = 10

/** Size of a file, 0 when it cannot be read. */
function statSafe(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/** The command that starts this program: source entry under the runtime, or the compiled binary. */
export function serverCommand(): string[] {
  const entry = fileURLToPath(new URL('../../../bin/service-server.ts', import.meta.url))
  return existsSync(entry) ? [process.execPath, entry] : [process.execPath]
}

interface Running {
  child: ChildProcess
  generation: number
  exited: Promise<void>
  stopping: boolean
  /** Its listening line was seen (the log may be rotated from then on). */
  listening: boolean
}

/** Options for {@link ProcessProvisioner}. */
export interface ProcessProvisionerOptions {
  /** Parent of every Worker's directory. */
  dataDir: string
  logger: Logger
  /** Override of the start command (tests of the compiled binary). */
  command?: string[]
  /** Size at which a runtime's `runtime.log` is rotated (default 1 MiB). */
  logCapBytes?: number
  /** How often held runtimes' logs are checked against the cap (default 1 s). */
  logCheckMs?: number
}

/** Runs Workers as local child processes. */
export class ProcessProvisioner implements Provisioner {
  readonly name = 'process'
  readonly #running = new Map<string, Running>()
  readonly #listeners: RuntimeExitListener[] = []
  readonly #options: ProcessProvisionerOptions
  #logTimer: ReturnType<typeof setInterval> | undefined

  constructor(options: ProcessProvisionerOptions) {
    this.#options = options
  }

  /** The last lines of a Worker's output (this host's file: it outlives the runtime and this process). */
  async logs(workerId: string, tail: number): Promise<{ lines: string[]; truncated: boolean }> {
    return tailRuntimeLog(this.#root(workerId), tail)
  }

  /** Rotates the logs of held runtimes over the cap; the timer runs only while some are held. */
  #watchLogs(): void {
    if (this.#logTimer) return
    this.#logTimer = setInterval(() => {
      if (this.#running.size === 0) {
        clearInterval(this.#logTimer)
        this.#logTimer = undefined
        return
      }
      for (const [workerId, running] of this.#running) {
        if (!running.listening) continue
        try {
          rotateRuntimeLog(this.#root(workerId), this.#options.logCapBytes ?? RUNTIME_LOG_CAP_BYTES)
        } catch (error) {
          this.#options.logger.warn('cannot rotate a Worker runtime log', { workerId, error: (error as Error).message })
        }
      }
    }, this.#options.logCheckMs ?? LOG_CHECK_MS)
    this.#logTimer.unref?.()
  }

  /** The runtime's last line of output (not a start marker), redacted and shortened, for an exit message. */
  #lastLine(workerId: string): string {
    const lines = tailRuntimeLog(this.#root(workerId), 3).lines.filter((line) => !line.startsWith(START_MARK))
    return redactSecrets((lines.at(-1) ?? '').trim()).slice(0, 300)
  }

  onExit(listener: RuntimeExitListener): void {
    this.#listeners.push(listener)
  }

  /** Process id of a Worker's runtime, if this provisioner runs it. */
  pidOf(workerId: string): number | null {
    return this.#running.get(workerId)?.child.pid ?? null
  }

  #root(workerId: string): string {
    return join(this.#options.dataDir, workerId)
  }

  /** Stops a runtime of `workerId` that this process does not hold, found through its pid file. */
  async #reapOrphan(workerId: string): Promise<void> {
    const pidFile = join(this.#root(workerId), 'runtime.pid')
    let pid: number
    try {
      pid = Number(readFileSync(pidFile, 'utf8').trim())
    } catch {
      return
    }
    await this.reap(workerId, pid)
    rmSync(pidFile, { force: true })
  }

  async reap(workerId: string, pid: number): Promise<void> {
    if (this.#running.get(workerId)?.child.pid === pid) return this.stop(workerId)
    // Only a process whose environment names this Worker is signalled: a pid recorded by another
    // control plane may have been reused by an unrelated process since.
    const ours = (): boolean => {
      try {
        return (
          Number.isInteger(pid) &&
          pid > 1 &&
          !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')) &&
          readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`SERVICE_WORKER_ID=${workerId}`)
        )
      } catch {
        return false
      }
    }
    if (!ours()) return
    this.#options.logger.info('stopping a Worker runtime left by another control plane', { workerId, pid })
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(pid, name)
      } catch {
        // already gone
      }
    }
    signal('SIGTERM')
    let deadline = Date.now() + STOP_GRACE_MS
    while (ours() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    if (!ours()) return
    signal('SIGKILL')
    deadline = Date.now() + STOP_GRACE_MS
    while (ours() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
  }

  running(): Array<{ workerId: string; generation: number }> {
    return [...this.#running].map(([workerId, running]) => ({ workerId, generation: running.generation }))
  }

  async start(request: ProvisionRequest): Promise<ProvisionedRuntime> {
    await this.stop(request.workerId)
    const root = this.#root(request.workerId)
    const workspaceDir = join(root, 'workspace')
    mkdirSync(workspaceDir, { recursive: true, mode: 0o700 })
    mkdirSync(join(root, 'data'), { recursive: true, mode: 0o700 })
    const [command, ...prefix] = this.#options.command ?? serverCommand()
    const env: Record<string, string> = {}
    for (const name of PASSED_ENV) if (process.env[name] !== undefined) env[name] = process.env[name]!
    Object.assign(env, {
      HOME: root,
      SERVICE_SERVER_CONFIG: join(root, 'server.json'),
      SERVICE_TOKEN: request.credentials.client,
      SERVICE_HOST_TOKEN: request.credentials.host,
      SERVICE_LOG_FORMAT: 'json',
      SERVICE_CONTROL_PLANE_URL: request.controlPlaneUrl,
      SERVICE_WORKER_ID: request.workerId,
      SERVICE_WORKER_ACTIVITY_TOKEN: request.credentials.activity,
      SERVICE_WORKER_HEARTBEAT_INTERVAL_MS: String(request.heartbeatIntervalMs),
    })
    const args = [
      ...prefix,
      '--mode',
      'workspace',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--data-dir',
      join(root, 'data'),
      '--workspace',
      workspaceDir,
    ]
    const logPath = join(root, RUNTIME_LOG)
    const logFd = openRuntimeLog(root, this.#options.logCapBytes ?? RUNTIME_LOG_CAP_BYTES)
    let child: ChildProcess
    let logOffset: number
    try {
      appendRuntimeLog(
        logFd,
        `${START_MARK} ${new Date().toISOString()} control plane: starting the runtime (generation ${request.generation})`,
      )
      logOffset = statSync(logPath).size
      // The child writes to the file itself (O_APPEND), so its output does not depend on this process.
      child = spawn(command!, args, { cwd: root, env, stdio: ['ignore', logFd, logFd] })
    } finally {
      closeSync(logFd)
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const running: Running = { child, generation: request.generation, exited, stopping: false, listening: false }
    this.#running.set(request.workerId, running)
    this.#watchLogs()
    child.once('exit', (code, signal) => {
      if (this.#running.get(request.workerId) === running) this.#running.delete(request.workerId)
      if (running.stopping) return
      const how = signal ? `signal ${signal}` : `code ${code}`
      const tail = this.#lastLine(request.workerId)
      for (const listener of this.#listeners)
        listener(request.workerId, {
          reason: 'process_exited',
          message: `the runtime exited with ${how}${tail ? `: ${tail.slice(0, 300)}` : ''}`,
        })
    })
    try {
      if (child.pid && request.onSpawn) await request.onSpawn(child.pid)
      const url = await new Promise<string>((resolve, reject) => {
        let timer: ReturnType<typeof setTimeout> | undefined
        const finish = (error: Error | null, found?: string) => {
          clearTimeout(timer)
          timer = undefined
          request.signal.removeEventListener('abort', onAbort)
          if (error) reject(error)
          else resolve(found!)
        }
        const onAbort = () => finish(request.signal.reason ?? new Error('provisioning aborted'))
        if (request.signal.aborted) return onAbort()
        request.signal.addEventListener('abort', onAbort, { once: true })
        child.once('error', (error) => finish(new Error(`cannot start the runtime: ${error.message}`)))
        child.once('exit', (code, signal) =>
          finish(
            new Error(
              `the runtime exited before listening (${signal ? `signal ${signal}` : `code ${code}`}): ${this.#lastLine(request.workerId)}`,
            ),
          ),
        )
        // The output goes to the file: read what it gained since the spawn until the listening line
        // (a whole line: a read can end inside it). `carry` holds the unfinished end of the last read.
        let carry = ''
        const look = () => {
          timer = undefined
          try {
            const size = statSync(logPath).size
            if (size > logOffset) {
              const fd = openSync(logPath, 'r')
              try {
                const chunk = Buffer.alloc(Math.min(size - logOffset, 64 * 1024))
                const read = readSync(fd, chunk, 0, chunk.length, logOffset)
                logOffset += read
                const text = carry + chunk.subarray(0, read).toString('utf8')
                const match = /listening on (http:\/\/\S+)\s/.exec(text)
                if (match) return finish(null, match[1]!)
                carry = text.slice(-1000)
              } finally {
                closeSync(fd)
              }
            }
          } catch {
            // the file is re-read on the next look
          }
          timer = setTimeout(look, logOffset < statSafe(logPath) ? 0 : LISTEN_POLL_MS)
        }
        look()
      })
      running.listening = true
      if (child.pid) await writeFileAtomic(join(root, 'runtime.pid'), `${child.pid}\n`, { mode: 0o600 })
      return { url, pid: child.pid ?? null, workspaceDir }
    } catch (error) {
      // Only this start's own process: a newer runtime of the Worker is never stopped from here.
      await this.#stopRunning(request.workerId, running)
      throw error
    }
  }

  async stop(workerId: string): Promise<void> {
    const running = this.#running.get(workerId)
    if (!running) return this.#reapOrphan(workerId)
    await this.#stopRunning(workerId, running)
  }

  async #stopRunning(workerId: string, running: Running): Promise<void> {
    running.stopping = true
    if (this.#running.get(workerId) === running) this.#running.delete(workerId)
    if (running.child.exitCode !== null || running.child.signalCode !== null) return
    running.child.kill('SIGTERM')
    const timer = setTimeout(() => running.child.kill('SIGKILL'), STOP_GRACE_MS)
    await running.exited
    clearTimeout(timer)
    rmSync(join(this.#root(workerId), 'runtime.pid'), { force: true })
  }

  async close(): Promise<string[]> {
    const ids = [...this.#running.keys()]
    await Promise.all(ids.map((id) => this.stop(id)))
    clearInterval(this.#logTimer)
    this.#logTimer = undefined
    return ids
  }
}
