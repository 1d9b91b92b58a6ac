/**
 * Run a short-lived command to completion and capture its output.
 *
 * Why: load generators and builds are child processes too; they must be
 * tracked for Ctrl-C cleanup and must not hang the bench, so every such
 * call has a hard timeout.
 */
import { spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { track } from './child-registry.ts'

/** Outcome of a finished command. */
export interface CommandResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  timedOut: boolean
}

/** Options for `runCommand`. */
export interface RunCommandOptions {
  cwd?: string
  env?: Record<string, string>
  /** SIGKILL after this many ms (default 120 s). */
  timeoutMs?: number
}

/** Run `command args...`, resolve with its output (never rejects for a non-zero exit; check `code`). */
export function runCommand(command: string, args: string[], opts: RunCommandOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(command, args, {
        cwd: opts.cwd,
        env: { ...process.env, ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    )
    let stdout = ''
    let stderr = ''
    let timedOut = false
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      stdout += c
    })
    child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      stderr += c
    })
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, opts.timeoutMs ?? 120_000)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, timedOut })
    })
  })
}

/** True if `name` resolves to an executable on PATH. */
export function onPath(name: string): boolean {
  const dirs = (process.env.PATH ?? '').split(':').filter(Boolean)
  for (const dir of dirs) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK)
      return true
    } catch {
      /* keep looking */
    }
  }
  return false
}
