/**
 * Start a server process and wait for its "listening" line.
 *
 * Why: every server in the bench (product, baseline, hello-world) announces
 * itself with the same stdout line,
 *   `service-server <version> <mode> listening on http://<host>:<port>`,
 * and is started with `--port 0`, so the only race-free way to learn the port
 * is to read that line. This module owns spawning, parsing, draining the
 * pipes (a child that logs per request must never block on a full pipe) and
 * stopping (SIGTERM, then SIGKILL after a grace period).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { pinned } from './cpu-pinning.ts'
import { closeSync, openSync, readSync, fstatSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { track } from './child-registry.ts'

/** The exact announcement format; capture groups: version, mode, host, port. */
export const LISTENING_LINE = /^service-server (\S+) (\S+) listening on http:\/\/(\[[^\]]+\]|[^\s:/]+):(\d+)$/

/** How to launch one server. */
export interface ServerCommand {
  /** Short name used in logs and errors, e.g. "baseline" or "ours(binary)". */
  label: string
  /** Executable (absolute path preferred, so the pid is the server itself, not a wrapper). */
  command: string
  args: string[]
  /** Working directory; defaults to the current one. Use a temp dir so no stray .env/bunfig is picked up. */
  cwd?: string
  /** Extra environment variables (merged over process.env). */
  env?: Record<string, string>
  /**
   * Send the child's stderr to this file instead of a pipe. Why: a server that
   * logs every request would otherwise make the bench process burn CPU draining
   * the pipe, competing with the server and the load generator; a file costs the
   * server a realistic write and the bench nothing.
   */
  stderrFile?: string
}

/** A server that has printed its listening line. */
export interface RunningServer {
  label: string
  pid: number
  host: string
  port: number
  /** `http://host:port` without a trailing slash. */
  baseUrl: string
  /** Version and mode fields parsed from the listening line. */
  version: string
  mode: string
  /** `performance.now()` just before spawn, and when the listening line arrived. */
  spawnedAt: number
  listeningAt: number
  /** Stdout lines printed before the listening line (should normally be empty). */
  linesBeforeListening: string[]
  /** Tail of stdout/stderr, for error messages. */
  outputTail(): string
  /** SIGTERM, wait up to `graceMs`, then SIGKILL. Resolves once the process has exited. Idempotent. */
  stop(graceMs?: number): Promise<void>
  /** Resolves with the exit code/signal when the process exits. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Start `cmd` and resolve once its listening line is seen; rejects (and kills it) on timeout or early exit. */
export async function startServer(cmd: ServerCommand, timeoutMs = 15_000): Promise<RunningServer> {
  const tail: string[] = []
  const remember = (line: string) => {
    tail.push(line)
    if (tail.length > 40) tail.shift()
  }
  const stderrFd = cmd.stderrFile ? openSync(cmd.stderrFile, 'a') : undefined
  const spawnedAt = performance.now()
  let child: ChildProcess
  try {
    child = track(
      spawn(...pinned('server', cmd.command, cmd.args), {
        cwd: cmd.cwd,
        env: { ...process.env, ...cmd.env },
        stdio: ['ignore', 'pipe', stderrFd ?? 'pipe'],
      }),
    )
  } finally {
    if (stderrFd !== undefined) closeSync(stderrFd)
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject))
  spawnError.catch(() => {})

  const stop = makeStopper(child, exited)
  const linesBeforeListening: string[] = []

  const listening = new Promise<{ line: string; m: RegExpExecArray; at: number }>((resolve, reject) => {
    let found = false
    let stdoutBuf = ''
    child.stdout!.setEncoding('utf8')
    child.stdout!.on('data', (chunk: string) => {
      // Keep draining after the line was found; only parse until then.
      stdoutBuf += chunk
      let nl: number
      while ((nl = stdoutBuf.indexOf('\n')) >= 0) {
        const line = stdoutBuf.slice(0, nl).replace(/\r$/, '')
        stdoutBuf = stdoutBuf.slice(nl + 1)
        remember(`[stdout] ${line}`)
        if (found) continue
        const m = LISTENING_LINE.exec(line)
        if (m) {
          found = true
          resolve({ line, m, at: performance.now() })
        } else {
          linesBeforeListening.push(line)
        }
      }
      if (stdoutBuf.length > 65_536) stdoutBuf = stdoutBuf.slice(-4096)
    })
    let stderrBuf = ''
    child.stderr?.setEncoding('utf8')
    child.stderr?.on('data', (chunk: string) => {
      stderrBuf += chunk
      let nl: number
      while ((nl = stderrBuf.indexOf('\n')) >= 0) {
        remember(`[stderr] ${stderrBuf.slice(0, nl)}`)
        stderrBuf = stderrBuf.slice(nl + 1)
      }
      if (stderrBuf.length > 65_536) stderrBuf = stderrBuf.slice(-4096)
    })
    exited.then(({ code, signal }) => {
      if (!found)
        reject(new Error(`${cmd.label} exited (code ${code}, signal ${signal}) before printing its listening line`))
    })
    spawnError.catch((err) => reject(new Error(`${cmd.label} failed to spawn: ${err.message}`)))
  })

  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${cmd.label} printed no listening line within ${timeoutMs} ms`)),
      timeoutMs,
    )
  })
  try {
    const { m, at } = await Promise.race([listening, timeout])
    const host = m[3]!
    const port = Number(m[4])
    return {
      label: cmd.label,
      pid: child.pid!,
      host,
      port,
      baseUrl: `http://${host}:${port}`,
      version: m[1]!,
      mode: m[2]!,
      spawnedAt,
      listeningAt: at,
      linesBeforeListening,
      outputTail: () => outputTail(tail, cmd.stderrFile),
      stop,
      exited,
    }
  } catch (err) {
    await stop(500)
    const msg = err instanceof Error ? err.message : String(err)
    throw new Error(
      `${msg}\n  command: ${cmd.command} ${cmd.args.join(' ')}\n  output:\n${indent(outputTail(tail, cmd.stderrFile))}`,
    )
  } finally {
    clearTimeout(timer)
  }
}

function makeStopper(child: ChildProcess, exited: Promise<unknown>): (graceMs?: number) => Promise<void> {
  let stopping: Promise<void> | undefined
  return (graceMs = 3000) => {
    stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      try {
        child.kill('SIGTERM')
      } catch {
        return
      }
      let timer: ReturnType<typeof setTimeout> | undefined
      const graceOver = new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), graceMs)
      })
      const result = await Promise.race([exited.then(() => 'exited' as const), graceOver])
      clearTimeout(timer)
      if (result === 'timeout') {
        try {
          child.kill('SIGKILL')
        } catch {
          /* gone */
        }
        await exited
      }
    })()
    return stopping
  }
}

/** Remembered stdout/stderr lines plus, when stderr went to a file, the file's last 4 KB. */
function outputTail(lines: string[], stderrFile?: string): string {
  if (!stderrFile) return lines.join('\n')
  let fileTail = ''
  try {
    const fd = openSync(stderrFile, 'r')
    try {
      const size = fstatSync(fd).size
      const len = Math.min(size, 4096)
      const buf = Buffer.alloc(len)
      readSync(fd, buf, 0, len, size - len)
      fileTail = buf.toString('utf8')
    } finally {
      closeSync(fd)
    }
  } catch {
    /* no file */
  }
  return [
    ...lines,
    ...fileTail
      .split('\n')
      .filter(Boolean)
      .map((l) => `[stderr] ${l}`),
  ].join('\n')
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n')
}

/**
 * Run `fn` with a started server and always stop it afterwards.
 * Why: keeps "kill in finally" a one-liner in cases.
 */
export async function withServer<T>(
  cmd: ServerCommand,
  fn: (server: RunningServer) => Promise<T>,
  timeoutMs?: number,
): Promise<T> {
  const server = await startServer(cmd, timeoutMs)
  try {
    return await fn(server)
  } finally {
    await server.stop()
  }
}
