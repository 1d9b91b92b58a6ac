/**
 * `npm run image`: the container image Workers run in (`workers.container.image`), built offline
 * from files of this machine: the compiled binary (`dist/service-server`, built when missing) and
 * only the shared libraries `ldd` lists for it, plus a minimal /etc/passwd, an empty /tmp and the
 * Worker's home `/worker`. No registry, no base image.
 *
 * The result is a docker-archive tarball (`dist/image/service-server-image-<hash>.tar`) that any
 * Docker Engine API loads with `POST /images/load` (`docker load`, `podman load`), tagged
 * `localhost/service-server:<hash>` and `:latest`, where `<hash>` starts the binary's SHA-256: the
 * same binary gives the same archive, so a second run reuses it (the provisioner tests rely on
 * this). `--out <dir>` puts it elsewhere; the path is printed on the last line.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { tarHeader, tarPadding, TAR_END, type TarEntry } from './src/control-plane/workers/container/tar-archive.ts'

const root = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname)

/** A built image archive. */
export interface ImageArchive {
  /** Path of the docker-archive tarball. */
  archive: string
  /** The tag it loads as (`localhost/service-server:<hash>`). */
  tag: string
}

/** SHA-256 of a file, read in chunks. */
function fileHash(path: string): string {
  const hash = createHash('sha256')
  const fd = openSync(path, 'r')
  const buffer = Buffer.alloc(1 << 20)
  try {
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) hash.update(buffer.subarray(0, n))
  } finally {
    closeSync(fd)
  }
  return hash.digest('hex')
}

/** The libraries the dynamic linker loads for `binary`, as `ldd` lists them (absolute paths). */
export function neededLibraries(binary: string): string[] {
  const result = spawnSync('ldd', [binary], { encoding: 'utf8' })
  if (result.status !== 0) {
    if (/not a dynamic executable/.test(`${result.stdout}${result.stderr}`)) return []
    throw new Error(`ldd failed: ${result.stderr.trim()}`)
  }
  const paths: string[] = []
  for (const line of result.stdout.split('\n')) {
    const match = /=>\s+(\/\S+)\s+\(/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line)
    if (match) paths.push(match[1]!)
  }
  return [...new Set(paths)]
}

/** Appends to an open archive, hashing what it writes. */
class TarWriter {
  readonly #fd: number
  readonly #hash = createHash('sha256')
  constructor(path: string) {
    this.#fd = openSync(path, 'w', 0o644)
  }
  #write(bytes: Buffer): void {
    this.#hash.update(bytes)
    writeSync(this.#fd, bytes)
  }
  add(entry: TarEntry): void {
    this.#write(tarHeader(entry))
    if (entry.type === 'file' && entry.data)
      this.#write(Buffer.concat([Buffer.from(entry.data), tarPadding(entry.data.length)]))
  }
  /** A member whose content is the file at `source` (followed through symlinks). */
  addFile(name: string, source: string, mode: number): void {
    const size = statSync(source).size
    this.#write(tarHeader({ name, type: 'file', mode, size }))
    const fd = openSync(source, 'r')
    const buffer = Buffer.alloc(1 << 20)
    try {
      for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) this.#write(buffer.subarray(0, n))
    } finally {
      closeSync(fd)
    }
    this.#write(tarPadding(size))
  }
  /** Ends the archive; returns its SHA-256. */
  end(): string {
    this.#write(TAR_END)
    closeSync(this.#fd)
    return this.#hash.digest('hex')
  }
}

/** Builds (or finds, for the same binary) the image archive of `binary` in `outDir`. */
export function buildImageArchive(options: { binary?: string; outDir?: string } = {}): ImageArchive {
  const binary = options.binary ?? join(root, 'dist', 'service-server')
  if (!existsSync(binary)) throw new Error(`${binary} does not exist (run npm run build)`)
  const outDir = options.outDir ?? join(root, 'dist', 'image')
  const id = fileHash(binary).slice(0, 16)
  const tag = `localhost/service-server:${id}`
  const archive = join(outDir, `service-server-image-${id}.tar`)
  if (existsSync(archive)) return { archive, tag }
  mkdirSync(outDir, { recursive: true })

  const layerPath = join(outDir, `layer-${id}.tar.partial`)
  const layer = new TarWriter(layerPath)
  const dirs = new Set<string>()
  const dir = (path: string, mode = 0o755, owner = 0) => {
    if (path === '/' || dirs.has(path)) return
    dir(dirname(path))
    dirs.add(path)
    layer.add({ name: path.slice(1), type: 'dir', mode, uid: owner, gid: owner })
  }
  dir('/tmp', 0o1777)
  dir('/worker', 0o755, 65534)
  dir('/etc')
  layer.add({
    name: 'etc/passwd',
    type: 'file',
    mode: 0o644,
    data: Buffer.from('root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/worker/home:/sbin/nologin\n'),
  })
  layer.add({ name: 'etc/group', type: 'file', mode: 0o644, data: Buffer.from('root:x:0:\nnogroup:x:65534:\n') })
  for (const lib of neededLibraries(binary)) {
    dir(dirname(lib))
    layer.addFile(lib.slice(1), lib, 0o755)
  }
  layer.addFile('service-server', binary, 0o755)
  const layerHash = layer.end()

  const config = Buffer.from(
    JSON.stringify({
      architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
      os: 'linux',
      config: {
        Entrypoint: ['/service-server'],
        User: '65534:65534',
        WorkingDir: '/worker',
        Env: ['PATH=/', 'HOME=/worker/home'],
        Labels: { 'org.opencontainers.image.title': 'service-server' },
      },
      rootfs: { type: 'layers', diff_ids: [`sha256:${layerHash}`] },
      history: [{ created_by: 'npm run image' }],
    }),
  )
  const configName = `${createHash('sha256').update(config).digest('hex')}.json`
  const manifest = Buffer.from(
    JSON.stringify([{ Config: configName, RepoTags: [tag, 'localhost/service-server:latest'], Layers: ['layer.tar'] }]),
  )
  const partial = `${archive}.partial`
  const out = new TarWriter(partial)
  out.add({ name: configName, type: 'file', mode: 0o644, data: config })
  out.addFile('layer.tar', layerPath, 0o644)
  out.add({ name: 'manifest.json', type: 'file', mode: 0o644, data: manifest })
  out.end()
  renameSync(partial, archive)
  rmSync(layerPath, { force: true })
  return { archive, tag }
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const outAt = args.indexOf('--out')
  const binary = join(root, 'dist', 'service-server')
  if (!existsSync(binary)) {
    const built = spawnSync(process.execPath, [join(root, 'build.ts')], { stdio: 'inherit' })
    if (built.status !== 0) process.exit(built.status ?? 1)
  }
  const image = buildImageArchive({ binary, outDir: outAt >= 0 ? resolve(args[outAt + 1] ?? '.') : undefined })
  console.log(`image ${image.tag} (load with: podman load -i ${image.archive})`)
  console.log(image.archive)
}
