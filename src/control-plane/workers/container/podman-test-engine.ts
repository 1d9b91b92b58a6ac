/**
 * A Podman engine of a test's own (or a bench's): `podman system service` on a socket in a temp
 * dir, with its own storage root, run root and tmp dir, so runs never share containers, images or
 * volumes; runc as the runtime (crun fails on these hosts). The image is `npm run image`'s,
 * built once per binary and cached in the system temp dir, then loaded into each engine.
 * @module
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createReadStream, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildImageArchive } from '../../../../image.ts'
import { DockerEngine } from './docker-engine.ts'
import { LABELS } from './container-provisioner.ts'

const RUNC = '/usr/sbin/runc'

/** Whether podman and runc are installed here. */
export function podmanAvailable(): boolean {
  return spawnSync('podman', ['--version']).status === 0 && existsSync(RUNC)
}

/** A running test engine. */
export interface TestEngine {
  /** `unix://…/podman.sock` */
  url: string
  engine: DockerEngine
  /** Stops the API service (containers keep running: conmon holds them). */
  stopService(): Promise<void>
  /** Starts the API service again on the same socket and storage. */
  startService(): Promise<void>
  /** Containers carrying `label` (`key=value`), any state. */
  containers(label: string): Promise<Array<{ Id: string; State: string; Labels: Record<string, string> }>>
  /** Loads the image of `binary` (built and cached by its hash); returns its tag. */
  loadImage(binary: string): Promise<string>
  /** Stops the service and removes every container, volume and image of this engine. */
  close(): Promise<void>
}

/** Starts an engine with its storage under `dir`. */
export async function startTestEngine(dir: string): Promise<TestEngine> {
  // Socket paths are limited to 107 bytes and podman refuses a run root over 50: both live in a
  // short directory of their own; the storage root stays under `dir`.
  const shortDir = mkdtempSync(join(tmpdir(), 'pm-'))
  const storage = [join(dir, 'root'), join(shortDir, 'run'), join(shortDir, 'tmp')]
  for (const path of storage) mkdirSync(path, { recursive: true })
  const globals = [
    '--root',
    storage[0]!,
    '--runroot',
    storage[1]!,
    '--tmpdir',
    storage[2]!,
    '--runtime',
    RUNC,
    '--cgroup-manager',
    'cgroupfs',
    '--events-backend',
    'file',
  ]
  const socket = join(shortDir, 'podman.sock')
  const url = `unix://${socket}`
  const engine = new DockerEngine({ url }, { timeoutMs: 60_000 })
  let service: ChildProcess | null = null
  const startService = async () => {
    const started = spawn('podman', [...globals, 'system', 'service', '--time=0', url], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    service = started
    let stderr = ''
    started.stderr!.on('data', (chunk) => {
      stderr = (stderr + chunk.toString()).slice(-2000)
    })
    const deadline = Date.now() + 15_000
    for (;;) {
      try {
        if ((await engine.request('GET', '/_ping', undefined, { timeoutMs: 1000 })).status === 200) return
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline || started.exitCode !== null)
        throw new Error(`podman system service did not answer: ${stderr.trim().slice(-500)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const stopService = async () => {
    const child = service
    service = null
    if (!child || child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }
  try {
    await startService()
  } catch (error) {
    await stopService()
    rmSync(shortDir, { recursive: true, force: true })
    throw error
  }
  return {
    url,
    engine,
    stopService,
    startService,
    async containers(label) {
      const filters = encodeURIComponent(JSON.stringify({ label: [label] }))
      return (await engine.json<never[]>('GET', `/containers/json?all=1&filters=${filters}`)).value ?? []
    },
    async loadImage(binary) {
      const image = buildImageArchive({ binary, outDir: join(tmpdir(), 'service-server-images') })
      await engine.json('POST', '/images/load', createReadStream(image.archive), {
        contentType: 'application/x-tar',
        timeoutMs: 120_000,
      })
      return image.tag
    },
    async close() {
      await stopService()
      // Containers outlive the service; the CLI on the same storage removes them and their mounts.
      spawnSync('podman', [...globals, 'rm', '--all', '--force', '--time', '0'], { stdio: 'ignore', timeout: 60_000 })
      spawnSync('podman', [...globals, 'system', 'reset', '--force'], { stdio: 'ignore', timeout: 60_000 })
      rmSync(shortDir, { recursive: true, force: true })
    },
  }
}

/** The label selecting a Worker's containers. */
export const workerLabel = (workerId: string) => `${LABELS.worker}=${workerId}`
