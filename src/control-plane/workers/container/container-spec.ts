/**
 * What one Worker container is: the engine's create body (command, environment without secrets,
 * labels, confinement and limits, the volume and tmpfs, the network) and the archive of its home
 * written into the volume before it starts (the credential files). Pure: no engine calls.
 * @module
 */
import type { ContainerSettings } from '../../jobs/async-settings.ts'
import type { ProvisionRequest } from '../provisioner.ts'
import { tarArchive } from './tar-archive.ts'

/** Label keys set on every container and volume this provisioner creates. */
export const LABELS = {
  managed: 'io.service-server.managed',
  worker: 'io.service-server.worker-id',
  generation: 'io.service-server.token-generation',
  instance: 'io.service-server.instance-id',
} as const

/** Where the volume is mounted in the container: the Worker's home. */
export const HOME = '/worker'
/** The unprivileged user the runtime runs as (nobody). */
const RUNTIME_UID = 65534
/** The port a runtime listens on inside its own network namespace (not with the host network). */
export const CONTAINER_PORT = 8080

/** The volume holding a Worker's home. */
export function volumeName(workerId: string): string {
  return `service-server-worker-${workerId}`
}

/** With its own network namespace, the container reaches the host's loopback through slirp's gateway. */
function reachableFromContainer(settings: ContainerSettings, url: string): string {
  if (settings.network === 'host') return url
  return url.replace(/^(https?:\/\/)(127\.0\.0\.1|localhost|\[::1\])/, (_, scheme: string) => `${scheme}10.0.2.2`)
}

/** The body of `POST /containers/create` for `request`. */
export function containerSpec(
  settings: ContainerSettings,
  request: ProvisionRequest,
  labels: Record<string, string>,
): Record<string, unknown> {
  const { workerId } = request
  const volume = volumeName(workerId)
  const hostNetwork = settings.network === 'host'
  const controlPlaneUrl = settings.controlPlaneUrl ?? reachableFromContainer(settings, request.controlPlaneUrl)
  return {
    Image: settings.image,
    User: `${RUNTIME_UID}:${RUNTIME_UID}`,
    WorkingDir: HOME,
    Cmd: [
      '--mode',
      'workspace',
      '--host',
      hostNetwork ? '127.0.0.1' : '0.0.0.0',
      '--port',
      hostNetwork ? '0' : String(CONTAINER_PORT),
      '--data-dir',
      `${HOME}/data`,
      '--workspace',
      `${HOME}/workspace`,
    ],
    // Paths and settings only: the tokens are files in the volume, never in what inspect shows.
    Env: [
      `HOME=${HOME}/home`,
      'TMPDIR=/tmp',
      `SERVICE_SERVER_CONFIG=${HOME}/server.json`,
      'SERVICE_LOG_FORMAT=json',
      `SERVICE_CONTROL_PLANE_URL=${controlPlaneUrl}`,
      `SERVICE_WORKER_ID=${workerId}`,
      `SERVICE_WORKER_ACTIVITY_TOKEN_FILE=${HOME}/activity.token`,
      `SERVICE_WORKER_HEARTBEAT_INTERVAL_MS=${request.heartbeatIntervalMs}`,
    ],
    Labels: labels,
    ...(hostNetwork ? {} : { ExposedPorts: { [`${CONTAINER_PORT}/tcp`]: {} } }),
    HostConfig: {
      NetworkMode: settings.network,
      ...(hostNetwork ? {} : { PortBindings: { [`${CONTAINER_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] } }),
      ReadonlyRootfs: true,
      Privileged: false,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Memory: settings.memoryMb * 1024 * 1024,
      NanoCpus: Math.round(settings.cpus * 1e9),
      PidsLimit: settings.pidsLimit,
      // Explicit: the engine's defaults can exceed the hard limits of the host, and starts then fail.
      Ulimits: [
        { Name: 'nofile', Soft: 1024, Hard: 1024 },
        { Name: 'nproc', Soft: 1024, Hard: 1024 },
      ],
      Mounts: [{ Type: 'volume', Source: volume, Target: HOME }],
      Tmpfs: { '/tmp': 'rw,noexec,nosuid,size=64m' },
      RestartPolicy: { Name: 'no' },
    },
  }
}

/** The Worker's home as an archive: credential files (owner-only) and its directories. */
export function workerFiles(request: ProvisionRequest): Buffer {
  const own = { uid: RUNTIME_UID, gid: RUNTIME_UID }
  const config = JSON.stringify({ token: request.credentials.client, hostToken: request.credentials.host })
  return tarArchive([
    { name: '.', type: 'dir', mode: 0o700, ...own },
    { name: 'data', type: 'dir', mode: 0o700, ...own },
    { name: 'workspace', type: 'dir', mode: 0o700, ...own },
    { name: 'home', type: 'dir', mode: 0o700, ...own },
    { name: 'server.json', type: 'file', mode: 0o600, data: Buffer.from(config), ...own },
    { name: 'activity.token', type: 'file', mode: 0o600, data: Buffer.from(request.credentials.activity), ...own },
  ])
}
