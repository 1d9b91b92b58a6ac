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
 * `SERVICE_ENCRYPTION_KEY`) and listens on an ephemeral loopback port; the listening line on its
 * stdout gives the URL. Running from source the command is `<runtime> bin/service-server.ts`;
 * inside the compiled binary it is the binary itself.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../../core/logger.ts'
import { writeFileAtomic } from '../../storage/fs.ts'
import type { ProvisionedRuntime, ProvisionRequest, Provisioner, RuntimeExitListener } from './provisioner.ts'

/** Environment variables passed through to runtimes (everything else is withheld). */
const PASSED_ENV = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT']

/** How long a runtime may take to exit on SIGTERM before it is killed. */
const STOP_GRACE_MS = 2000

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
}

/** Options for {@link ProcessProvisioner}. */
export interface ProcessProvisionerOptions {
  /** Parent of every Worker's directory. */
  dataDir: string
  logger: Logger
  /** Override of the start command (tests of the compiled binary). */
  command?: string[]
}

/** Runs Workers as local child processes. */
export class ProcessProvisioner implements Provisioner {
  readonly name = 'process'
  readonly #running = new Map<string, Running>()
  readonly #listeners: RuntimeExitListener[] = []
  readonly #options: ProcessProvisionerOptions

  constructor(options: ProcessProvisionerOptions) {
    this.#options = options
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
    const child = spawn(command!, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (chunk) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const running: Running = { child, generation: request.generation, exited, stopping: false }
    this.#running.set(request.workerId, running)
    child.once('exit', (code, signal) => {
      if (this.#running.get(request.workerId) === running) this.#running.delete(request.workerId)
      if (running.stopping) return
      const how = signal ? `signal ${signal}` : `code ${code}`
      const tail = stderr.trim().split('\n').slice(-1)[0] ?? ''
      for (const listener of this.#listeners)
        listener(request.workerId, {
          reason: 'process_exited',
          message: `the runtime exited with ${how}${tail ? `: ${tail.slice(0, 300)}` : ''}`,
        })
    })
    try {
      if (child.pid && request.onSpawn) await request.onSpawn(child.pid)
      const url = await new Promise<string>((resolve, reject) => {
        let buffered = ''
        const onAbort = () => reject(request.signal.reason ?? new Error('provisioning aborted'))
        if (request.signal.aborted) onAbort()
        request.signal.addEventListener('abort', onAbort, { once: true })
        child.once('error', (error) => reject(new Error(`cannot start the runtime: ${error.message}`)))
        child.once('exit', (code, signal) =>
          reject(
            new Error(
              `the runtime exited before listening (${signal ? `signal ${signal}` : `code ${code}`}): ${stderr.trim().split('\n').slice(-2).join(' ').slice(0, 400)}`,
            ),
          ),
        )
        child.stdout!.on('data', (chunk) => {
          buffered += chunk.toString()
          const match = /listening on (http:\/\/\S+)/.exec(buffered)
          if (match) {
            request.signal.removeEventListener('abort', onAbort)
            resolve(match[1]!)
          }
          // Keep only the tail: output after the listening line (generated tokens) is not kept.
          if (buffered.length > 8000) buffered = buffered.slice(-2000)
        })
      })
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
    return ids
  }

  // Placeholder until the logs work lands (it keeps each runtime's recent output).
  async logs(_workerId: string, _tail: number): Promise<{ lines: string[]; truncated: boolean }> {
    return { lines: [], truncated: false }
  }
}
