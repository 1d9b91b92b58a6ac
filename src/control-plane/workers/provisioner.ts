/**
 * The seam between Worker routes and whatever runs a Worker: the `process` provisioner starts a
 * child process on this host; a container or cloud provisioner implements the same interface
 * and registers under its own name, without touching routes or the state machine.
 * @module
 */

/** The token set a runtime is launched with. */
export interface RuntimeCredentials {
  /** Bearer token for ordinary clients of the runtime. */
  client: string
  /** Host token for the runtime's administrative routes. */
  host: string
  /** Token the runtime presents when it reports heartbeats to the control plane. */
  activity: string
}

/** What a provisioner needs to start one Worker. */
export interface ProvisionRequest {
  workerId: string
  orgId: string
  name: string
  credentials: RuntimeCredentials
  /** Where the runtime reports heartbeats. */
  controlPlaneUrl: string
  heartbeatIntervalMs: number
  /** Token generation of `credentials`: a runtime of an older generation must not keep running. */
  generation: number
  /**
   * Called once the runtime process exists, before it listens, so its pid is recorded in the
   * database while it starts (a crash of the control plane in between still leaves it findable).
   */
  onSpawn?(pid: number): Promise<void>
  /** Aborted at the job's deadline or on shutdown; the provisioner must give up and clean up. */
  signal: AbortSignal
}

/** A started runtime. */
export interface ProvisionedRuntime {
  /** Base URL clients use to reach the runtime. */
  url: string
  /** Host process id, when the runtime is a local process. */
  pid: number | null
  /** Directory holding the runtime's workspace and state, when local. */
  workspaceDir: string | null
}

/** Called when a runtime ends on its own (crash, kill), with a reason kept on the Worker. */
export type RuntimeExitListener = (workerId: string, reason: { reason: string; message: string }) => void

/** Reports a problem reaching the runtimes of `workerIds` (such as an unreachable engine), or null once it is gone. */
export type RuntimeStateListener = (workerIds: string[], problem: { reason: string; message: string } | null) => void

/** A way of running Workers. */
export interface Provisioner {
  /** Name clients pass as `provisioner` in `POST /v1/workers`. */
  readonly name: string
  /**
   * Whether {@link Provisioner.reap} works from any control-plane host (runtimes live on a shared
   * engine and are found by label), not only on the host that started the runtime.
   */
  readonly reapsAnywhere?: boolean
  /** Starts (or restarts) the Worker's runtime; resolves once it accepts connections. */
  start(request: ProvisionRequest): Promise<ProvisionedRuntime>
  /** Stops the Worker's runtime if it runs; resolves once it has exited. */
  stop(workerId: string): Promise<void>
  /**
   * Stops a runtime of `workerId` this provisioner does not hold (left by a crashed or lost control
   * plane on this host), identified by `pid`; never signals a process that is not that Worker's
   * runtime. Resolves once it is gone (or was never there). A provisioner that finds runtimes
   * another way (labels on an engine) may ignore `pid`.
   */
  reap(workerId: string, pid: number): Promise<void>
  /** Removes what the Worker kept beside its runtime (a workspace volume) once it is deleted. */
  destroy?(workerId: string): Promise<void>
  /** Subscribes to problems reaching runtimes that are not their exit (an unreachable engine). */
  onRuntimeState?(listener: RuntimeStateListener): void
  /** The runtime's recent output (stdout and stderr interleaved), at most `tail` lines, oldest first. */
  logs(workerId: string, tail: number): Promise<{ lines: string[]; truncated: boolean }>
  /** Runtimes this provisioner holds now (starting or running), with their token generation. */
  running(): Array<{ workerId: string; generation: number }>
  /** Subscribes to runtimes ending on their own. */
  onExit(listener: RuntimeExitListener): void
  /** Stops every runtime this provisioner started (control-plane shutdown). Returns their ids. */
  close(): Promise<string[]>
}
