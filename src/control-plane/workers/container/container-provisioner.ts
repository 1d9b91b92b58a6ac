/**
 * The `container` provisioner: each Worker is one container on a Docker Engine API endpoint
 * (Docker, or Podman's `podman system service`), created from `workers.container.image` with
 * the compiled binary in `--mode workspace`.
 *
 * - Labels name the Worker, its token generation and the owning control-plane instance; the
 *   engine, not `/proc`, is how a restarted control plane (or another instance, on any host that
 *   reaches the same engine) finds a runtime it must stop ({@link ContainerProvisioner.reap}).
 *   Runtimes are replaced rather than adopted: a start first removes every container of the
 *   Worker, so there are never two.
 * - Confinement: read-only root filesystem, a named volume for the Worker's home (workspace, data,
 *   credentials), a tmpfs for /tmp, every capability dropped, no new privileges, memory, CPU and
 *   pids limits, explicit nofile/nproc ulimits, a non-root user.
 * - Credentials never go into the container's configuration (which `inspect` shows): they are
 *   files written into the volume through the archive API before the container starts; the
 *   environment holds only their paths.
 * - The engine being unreachable is a state: a start fails with reason `engine_unreachable` (the
 *   job retries with backoff), and the check of running containers reports it (the Worker turns
 *   `unreachable`) with its own backoff until the engine answers again.
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { Logger } from '../../../core/logger.ts'
import type { ContainerSettings } from '../../jobs/async-settings.ts'
import { controlPlaneError } from '../../control-plane-errors.ts'
import { JobFailure } from '../../jobs/job-queue.ts'
import type {
  ProvisionedRuntime,
  ProvisionRequest,
  Provisioner,
  RuntimeExitListener,
  RuntimeStateListener,
} from '../provisioner.ts'
import { DockerEngine, EngineError, EngineUnreachable, logLines } from './docker-engine.ts'
import { CONTAINER_PORT, containerSpec, HOME, LABELS, volumeName, workerFiles } from './container-spec.ts'

export { LABELS, volumeName } from './container-spec.ts'

/** Seconds a container gets to exit on SIGTERM before the engine kills it. */
const STOP_GRACE_S = 2
/** Longest line kept by {@link ContainerProvisioner.logs}. */
const MAX_LOG_LINE = 4000
/** Upper bound of the check's backoff while the engine is unreachable. */
const MAX_CHECK_BACKOFF_MS = 30_000

interface Held {
  containerId: string
  generation: number
  /** Started and seen listening (a start in progress is not checked). */
  ready: boolean
}

interface ContainerSummary {
  Id: string
  State: string
  Labels: Record<string, string> | null
  Created: number
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs Workers as containers on a Docker Engine API endpoint. */
export class ContainerProvisioner implements Provisioner {
  readonly name = 'container'
  /** Any instance that reaches the engine can stop a runtime, whatever host started it. */
  readonly reapsAnywhere = true
  readonly #engine: DockerEngine
  readonly #settings: ContainerSettings
  readonly #instanceId: string
  readonly #log: Logger
  readonly #held = new Map<string, Held>()
  readonly #exitListeners: RuntimeExitListener[] = []
  readonly #stateListeners: RuntimeStateListener[] = []
  #timer: ReturnType<typeof setTimeout> | undefined
  #engineDown: string | null = null
  /** Current delay between checks while the engine is unreachable (0 while it answers). */
  #delay = 0
  #closed = false

  constructor(options: { settings: ContainerSettings; instanceId: string; logger: Logger }) {
    this.#settings = options.settings
    this.#instanceId = options.instanceId
    this.#log = options.logger
    this.#engine = new DockerEngine({ url: options.settings.engine, tls: options.settings.tls })
    this.#schedule(options.settings.checkIntervalMs)
  }

  onExit(listener: RuntimeExitListener): void {
    this.#exitListeners.push(listener)
  }

  /** Subscribes to the engine becoming unreachable or reachable again for the Workers held here. */
  onRuntimeState(listener: RuntimeStateListener): void {
    this.#stateListeners.push(listener)
  }

  running(): Array<{ workerId: string; generation: number }> {
    return [...this.#held].map(([workerId, held]) => ({ workerId, generation: held.generation }))
  }

  /** Containers of `workerId` (any instance, any state), newest first. */
  async #containersOf(workerId: string): Promise<ContainerSummary[]> {
    const filters = encodeURIComponent(JSON.stringify({ label: [`${LABELS.worker}=${workerId}`] }))
    const { value } = await this.#engine.json<ContainerSummary[]>('GET', `/containers/json?all=1&filters=${filters}`)
    return (value ?? []).sort((a, b) => b.Created - a.Created)
  }

  /** Stops (SIGTERM, then SIGKILL after a grace) and removes one container; gone already is fine. */
  async #remove(containerId: string): Promise<void> {
    const id = encodeURIComponent(containerId)
    await this.#engine.json('POST', `/containers/${id}/stop?t=${STOP_GRACE_S}`, undefined, {
      ok: [304, 404],
      timeoutMs: (STOP_GRACE_S + 30) * 1000,
    })
    await this.#engine.json('DELETE', `/containers/${id}?force=1`, undefined, { ok: [404] })
  }

  /** Retries `fn` while the engine is unreachable, for a bounded time (stops must not be lost to a blip). */
  async #retrying<T>(fn: () => Promise<T>, budgetMs: number): Promise<T> {
    const deadline = Date.now() + budgetMs
    for (let wait = 100; ; wait = Math.min(wait * 2, 2000)) {
      try {
        return await fn()
      } catch (error) {
        if (!(error instanceof EngineUnreachable)) throw error
        // A route waiting for the stop (rotation, revocation, delete) answers 503 with a stable code;
        // the watch over runtimes keeps trying.
        if (Date.now() + wait > deadline)
          throw controlPlaneError('engine_unreachable', `Could not stop the Worker's container: ${error.message}`)
        await pause(wait)
      }
    }
  }

  stop(workerId: string): Promise<void> {
    return this.#stop(workerId, 15_000)
  }

  async #stop(workerId: string, budgetMs: number): Promise<void> {
    const held = this.#held.get(workerId)
    this.#held.delete(workerId)
    await this.#retrying(async () => {
      if (held) await this.#remove(held.containerId)
      // Also any container of the Worker this instance does not hold (left by a crash).
      for (const c of await this.#containersOf(workerId)) if (!this.#isHeld(c.Id)) await this.#remove(c.Id)
    }, budgetMs)
  }

  #isHeld(containerId: string): boolean {
    for (const held of this.#held.values()) if (held.containerId === containerId) return true
    return false
  }

  /** The recorded pid means nothing across hosts: the Worker's containers are found by label. */
  async reap(workerId: string, _pid: number): Promise<void> {
    const held = this.#held.get(workerId)
    await this.#retrying(async () => {
      for (const c of await this.#containersOf(workerId)) {
        if (held?.containerId === c.Id) continue
        this.#log.info('stopping a Worker container left by another control plane', { workerId })
        await this.#remove(c.Id)
      }
    }, 15_000)
  }

  /** Removes the Worker's volume (its workspace) once its containers are gone (delete). */
  async destroy(workerId: string): Promise<void> {
    await this.stop(workerId)
    await this.#retrying(
      () =>
        this.#engine.json('DELETE', `/volumes/${encodeURIComponent(volumeName(workerId))}?force=1`, undefined, {
          ok: [404],
        }),
      15_000,
    )
  }

  async close(): Promise<string[]> {
    this.#closed = true
    clearTimeout(this.#timer)
    const ids = [...this.#held.keys()]
    await Promise.all(
      ids.map((id) =>
        this.stop(id).catch((error) =>
          this.#log.warn('stopping a Worker container failed', { workerId: id, error: (error as Error).message }),
        ),
      ),
    )
    return ids
  }

  async logs(workerId: string, tail: number): Promise<{ lines: string[]; truncated: boolean }> {
    const containerId = this.#held.get(workerId)?.containerId ?? (await this.#containersOf(workerId))[0]?.Id
    if (!containerId) return { lines: [], truncated: false }
    const response = await this.#engine.request(
      'GET',
      `/containers/${encodeURIComponent(containerId)}/logs?stdout=1&stderr=1&tail=${tail + 1}`,
    )
    if (response.status === 404) return { lines: [], truncated: false }
    if (response.status !== 200) throw new EngineError(response.status, 'the engine refused to read the logs')
    const all = logLines(response.body).map((line) => (line.length > MAX_LOG_LINE ? line.slice(0, MAX_LOG_LINE) : line))
    return { lines: all.slice(-tail), truncated: all.length > tail }
  }

  /**
   * While the engine does not answer, the start is tried again with backoff until the attempt's
   * deadline (an engine restart must not use up the job's attempts); then it fails with
   * `engine_unreachable` and the job's own backoff takes over.
   */
  async start(request: ProvisionRequest): Promise<ProvisionedRuntime> {
    for (let wait = 250; ; wait = Math.min(wait * 2, 5000)) {
      try {
        return await this.#start(request)
      } catch (error) {
        const unreachable =
          error instanceof EngineUnreachable || (error as { code?: string }).code === 'engine_unreachable'
        if (!unreachable) throw error
        if (!request.signal.aborted) {
          this.#log.warn('the container engine is unreachable; starting the Worker again shortly', {
            workerId: request.workerId,
            error: (error as Error).message,
          })
          const resumed = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(true), wait)
            const onAbort = () => {
              clearTimeout(timer)
              resolve(false)
            }
            request.signal.addEventListener('abort', onAbort, { once: true })
          })
          if (resumed) continue
        }
        throw new JobFailure('engine_unreachable', (error as Error).message)
      }
    }
  }

  async #start(request: ProvisionRequest): Promise<ProvisionedRuntime> {
    const { workerId, generation } = request
    // No retries here: an unreachable engine fails this attempt at once, and the job retries it.
    await this.#stop(workerId, 0)
    request.signal.throwIfAborted()
    const labels = {
      [LABELS.managed]: 'true',
      [LABELS.worker]: workerId,
      [LABELS.generation]: String(generation),
      [LABELS.instance]: this.#instanceId,
    }
    const volume = volumeName(workerId)
    const existing = await this.#engine.json('GET', `/volumes/${encodeURIComponent(volume)}`, undefined, { ok: [404] })
    if (existing.status === 404)
      await this.#engine.json('POST', '/volumes/create', {
        Name: volume,
        Labels: { [LABELS.managed]: 'true', [LABELS.worker]: workerId },
      })
    const hostNetwork = this.#settings.network === 'host'
    const { value: created } = await this.#engine.json<{ Id: string }>(
      'POST',
      `/containers/create?name=${encodeURIComponent(`service-server-${workerId}-${generation}-${randomBytes(3).toString('hex')}`)}`,
      containerSpec(this.#settings, request, labels),
    )
    const containerId = created!.Id
    const held: Held = { containerId, generation, ready: false }
    this.#held.set(workerId, held)
    try {
      await this.#engine.json(
        'PUT',
        `/containers/${containerId}/archive?path=${encodeURIComponent(HOME)}`,
        workerFiles(request),
        {
          contentType: 'application/x-tar',
        },
      )
      await this.#engine.json('POST', `/containers/${containerId}/start`, undefined, { ok: [304] })
      const pid = await this.#inspectPid(containerId)
      if (pid && request.onSpawn) await request.onSpawn(pid)
      const url = await this.#listeningUrl(containerId, hostNetwork, request.signal)
      held.ready = true
      return { url, pid, workspaceDir: null }
    } catch (error) {
      if (this.#held.get(workerId) === held) this.#held.delete(workerId)
      await this.#remove(containerId).catch(() => {})
      throw error
    }
  }

  async #inspectPid(containerId: string): Promise<number | null> {
    const { value } = await this.#engine.json<{ State?: { Pid?: number } }>('GET', `/containers/${containerId}/json`)
    // Only the pid is read: the rest of inspect output is never logged or kept.
    const pid = value?.State?.Pid
    return typeof pid === 'number' && pid > 0 ? pid : null
  }

  /** Waits for the runtime's listening line in the container's output; fails if the container exits. */
  async #listeningUrl(containerId: string, hostNetwork: boolean, signal: AbortSignal): Promise<string> {
    for (let wait = 50; ; wait = Math.min(wait * 2, 500)) {
      signal.throwIfAborted()
      const response = await this.#engine.request('GET', `/containers/${containerId}/logs?stdout=1&stderr=1&tail=50`)
      const lines = logLines(response.body)
      const match = lines.map((line) => /listening on (http:\/\/\S+)/.exec(line)).find(Boolean)
      if (match) {
        if (hostNetwork) return match[1]!
        const { value } = await this.#engine.json<{
          NetworkSettings?: { Ports?: Record<string, Array<{ HostIp: string; HostPort: string }> | null> }
        }>('GET', `/containers/${containerId}/json`)
        const port = value?.NetworkSettings?.Ports?.[`${CONTAINER_PORT}/tcp`]?.[0]?.HostPort
        if (!port) throw new Error('the engine published no port for the runtime')
        return `http://127.0.0.1:${port}`
      }
      const { value } = await this.#engine.json<{ State?: { Running?: boolean; ExitCode?: number } }>(
        'GET',
        `/containers/${containerId}/json`,
      )
      if (value?.State?.Running === false) {
        const tail = lines.slice(-2).join(' ').slice(0, 400)
        throw new Error(`the runtime's container exited before listening (code ${value.State.ExitCode}): ${tail}`)
      }
      await pause(wait)
    }
  }

  #schedule(ms: number): void {
    if (this.#closed) return
    this.#timer = setTimeout(() => {
      void this.#check().then((next) => this.#schedule(next))
    }, ms)
    this.#timer.unref?.()
  }

  /**
   * One look at this instance's containers: a held runtime whose container stopped is reported
   * as exited (and removed); an engine that does not answer is reported once and checked again
   * with backoff. Returns the delay until the next look.
   */
  async #check(): Promise<number> {
    const base = this.#settings.checkIntervalMs
    const ready = [...this.#held].filter(([, held]) => held.ready)
    try {
      const filters = encodeURIComponent(JSON.stringify({ label: [`${LABELS.instance}=${this.#instanceId}`] }))
      const { value } = await this.#engine.json<ContainerSummary[]>(
        'GET',
        `/containers/json?all=1&filters=${filters}`,
        undefined,
        {
          timeoutMs: 10_000,
        },
      )
      const states = new Map((value ?? []).map((c) => [c.Id, c.State]))
      const wasDown = this.#engineDown !== null
      this.#engineDown = null
      this.#delay = 0
      const alive: string[] = []
      for (const [workerId, held] of ready) {
        const state = states.get(held.containerId)
        if (this.#held.get(workerId) !== held) continue
        if (state === 'running') {
          alive.push(workerId)
          continue
        }
        this.#held.delete(workerId)
        await this.#remove(held.containerId).catch(() => {})
        for (const listener of this.#exitListeners)
          listener(workerId, {
            reason: 'container_exited',
            message: state ? `the runtime's container is ${state}` : "the runtime's container is gone",
          })
      }
      if (wasDown) {
        this.#log.info('the container engine answers again')
        // Only runtimes still running are healthy again; the others were reported as exited above.
        this.#emitState(alive, null)
      }
      return base
    } catch (error) {
      const message = (error as Error).message
      if (this.#engineDown === null) {
        this.#log.warn('the container engine is unreachable', { error: message })
        this.#emitState(
          ready.map(([id]) => id),
          { reason: 'engine_unreachable', message },
        )
      }
      this.#engineDown = message
      this.#delay = Math.min(MAX_CHECK_BACKOFF_MS, 2 * (this.#delay || base))
      return this.#delay
    }
  }

  #emitState(workerIds: string[], problem: { reason: string; message: string } | null): void {
    if (workerIds.length === 0) return
    for (const listener of this.#stateListeners) listener(workerIds, problem)
  }
}
