/**
 * Test harness over uvu: suites with a per-test timeout (uvu has none, and a hung stream test
 * would hang CI), plus helpers shared by suites: temp dirs, in-process requests, SSE reading and
 * child-process servers.
 * @module
 */
import { suite as uvuSuite, type Test } from 'uvu'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export * as assert from 'uvu/assert'

/** Default per-test timeout; override per suite. */
const DEFAULT_TIMEOUT_MS = 30_000

/** A uvu suite whose tests fail (rather than hang) after `timeoutMs`. */
export function suite<T extends Record<string, unknown> = Record<string, never>>(
  name: string,
  options: { timeoutMs?: number } = {},
): Test<T> {
  const inner = uvuSuite<T>(name)
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const wrapped = ((testName: string, handler: (ctx: T) => unknown) =>
    inner(testName, async (ctx) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      try {
        await Promise.race([
          Promise.resolve().then(() => handler(ctx)),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`test timed out after ${timeoutMs} ms`)), timeoutMs)
          }),
        ])
      } catch (error) {
        // uvu's reporter crashes (and silently drops the failure) on errors without a usable stack.
        if (error instanceof Error && (error as { code?: string }).code === 'ERR_ASSERTION') throw error
        const plain = new Error(error instanceof Error ? `${error.name}: ${error.message}` : String(error))
        if (error instanceof Error && typeof error.stack === 'string') plain.stack = error.stack
        throw plain
      } finally {
        clearTimeout(timer)
      }
    })) as unknown as Test<T>
  return Object.assign(wrapped, {
    before: inner.before,
    after: inner.after,
    only: inner.only,
    skip: inner.skip,
    run: inner.run,
  }) as Test<T>
}

/** Creates a real temp directory (symlink-resolved) and returns it with a remover. */
export function tempDir(prefix = 'svc-test-'): { path: string; remove(): void } {
  const path = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

/** Runs `fn` with a temp dir that is removed afterwards, even on failure. */
export async function withTempDir<R>(fn: (dir: string) => Promise<R> | R, prefix?: string): Promise<R> {
  const dir = tempDir(prefix)
  try {
    return await fn(dir.path)
  } finally {
    dir.remove()
  }
}

/** Calls a Fetch handler in-process with a path and init, as a client would over HTTP. */
export function request(
  fetch: (r: Request) => Response | Promise<Response>,
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<Response> {
  const headers = new Headers(init.headers)
  let body = init.body
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json')
    body = JSON.stringify(init.json)
  }
  return Promise.resolve(fetch(new Request(`http://test.local${path}`, { ...init, headers, body })))
}

/** One parsed SSE frame. */
export interface SseFrame {
  id?: string
  event?: string
  data: string
}

/** Reads SSE frames from a response body as they arrive (comments are skipped). */
export async function* readSse(response: Response): AsyncGenerator<SseFrame> {
  let buffer = ''
  const decoder = new TextDecoder()
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let index: number
    while ((index = buffer.indexOf('\n\n')) >= 0) {
      const raw = buffer.slice(0, index)
      buffer = buffer.slice(index + 2)
      const frame: SseFrame = { data: '' }
      const data: string[] = []
      for (const line of raw.split('\n')) {
        if (line.startsWith(':') || line === '') continue
        const colon = line.indexOf(':')
        const key = colon < 0 ? line : line.slice(0, colon)
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (key === 'data') data.push(value)
        else if (key === 'id') frame.id = value
        else if (key === 'event') frame.event = value
      }
      if (data.length) {
        frame.data = data.join('\n')
        yield frame
      }
    }
  }
}

/** Collects `count` SSE frames or fails after `timeoutMs`. */
export async function takeSse(
  response: Response,
  count: number,
  timeoutMs = 5000,
  keep: (frame: SseFrame) => boolean = () => true,
): Promise<SseFrame[]> {
  const frames: SseFrame[] = []
  const iterator = readSse(response)
  const deadline = Date.now() + timeoutMs
  while (frames.length < count) {
    const remaining = deadline - Date.now()
    if (remaining <= 0) break
    let timer: ReturnType<typeof setTimeout> | undefined
    const next = await Promise.race([
      iterator.next(),
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), remaining)
      }),
    ])
    clearTimeout(timer)
    if (next === 'timeout' || next.done) break
    if (keep(next.value)) frames.push(next.value)
  }
  await iterator.return(undefined)
  return frames
}

/** The Bun binary from node_modules (tests run under Bun; children use the same runtime). */
export const BUN = process.execPath

/**
 * The Deno binary from node_modules: `npm install` brings it (the `deno` devDependency), so the
 * Deno suites never skip. Called by path, never by name: see stack-notes §5 on `deno task`.
 */
export const DENO = fileURLToPath(new URL('../node_modules/.bin/deno', import.meta.url))
if (!existsSync(DENO)) throw new Error(`${DENO} is missing: run npm install (the deno devDependency ships it)`)

/**
 * Runs `fn` with the URL of a new, empty PostgreSQL database on the test server
 * (`SERVICE_TEST_DATABASE_URL`), dropped afterwards even if `fn` throws.
 */
export async function withPostgresDatabase(fn: (url: string) => Promise<void>, prefix = 'svc_t'): Promise<void> {
  const server = process.env.SERVICE_TEST_DATABASE_URL
  if (!server) throw new Error('SERVICE_TEST_DATABASE_URL is not set')
  const { default: pg } = await import('pg')
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: server })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  await admin(`create database ${name}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  try {
    await fn(url.toString())
  } finally {
    await admin(`drop database if exists ${name} with (force)`)
  }
}

let built: Promise<string> | undefined

/**
 * Builds `dist/service-server` once per test process and returns its path: every suite that runs
 * the compiled binary shares one build instead of compiling it again.
 */
export function compiledBinary(): Promise<string> {
  built ??= (async () => {
    const root = fileURLToPath(new URL('..', import.meta.url))
    const result = await runCommand(BUN, ['build.ts'], { cwd: root, timeoutMs: 240_000 })
    if (result.code !== 0) throw new Error(`build failed: ${result.stderr}`)
    return join(root, 'dist', 'service-server')
  })()
  return built
}

/** A server started as a child process. */
export interface ChildServer {
  readonly process: ChildProcess
  readonly url: string
  readonly stdoutLines: string[]
  readonly stderr: () => string
  /** Sends SIGTERM and resolves with the exit code (null if killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts `command args` and waits for the `service-server … listening on http://host:port` line.
 * Rejects (and kills the child) if it exits first or does not listen within `timeoutMs`.
 */
export function startChild(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<ChildServer> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const stdoutLines: string[] = []
  let stderr = ''
  let buffered = ''
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  child.stderr!.on('data', (d) => {
    stderr += d.toString()
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`server did not start within ${options.timeoutMs ?? 20000} ms; stderr: ${stderr}`))
    }, options.timeoutMs ?? 20_000)
    let listening = false
    child.once('exit', (code) => {
      if (listening) return
      clearTimeout(timer)
      reject(new Error(`server exited with ${code} before listening; stderr: ${stderr}`))
    })
    child.stdout!.on('data', (d) => {
      buffered += d.toString()
      let index: number
      while ((index = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, index)
        buffered = buffered.slice(index + 1)
        stdoutLines.push(line)
        const match = /listening on (http:\/\/\S+)$/.exec(line)
        if (match && stdoutLines.length === 1) {
          clearTimeout(timer)
          listening = true
          resolve({
            process: child,
            url: match[1]!,
            stdoutLines,
            stderr: () => stderr,
            stop: async (signal = 'SIGTERM') => {
              if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
              child.kill(signal)
              return exited
            },
          })
        }
      }
    })
  })
}

/** Runs a command to completion and returns its exit code and output. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d) => {
      stdout += d.toString()
    })
    child.stderr!.on('data', (d) => {
      stderr += d.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}
