/**
 * The `git` connector type: any remote the `git` command can reach. A sync makes a shallow bare
 * clone of one branch into a temporary directory, lists the tree with `git ls-tree` and reads
 * blobs through one `git cat-file --batch` process, so a thousand files cost one process, not a
 * thousand.
 *
 * A token (from the account's sealed credentials) is passed as an HTTP header through
 * `GIT_CONFIG_*` environment variables, never on the command line where other local users could
 * read it; prompts are disabled so a missing credential fails instead of hanging. `file://` URLs
 * and local paths read this host's disk, so they are refused unless `connectors.allowFileUrls`.
 * @module
 */
import { Buffer } from 'node:buffer'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { shortMessage } from '../../jobs/job-queue.ts'
import { sourceFailure, type SourceEntry, type SourceLocation, type SourceSnapshot } from './source.ts'

/** Options for git access. */
export interface GitOptions {
  command: string
  allowFileUrls: boolean
}

/** True for URLs that read this host's filesystem. */
export function isLocalGitUrl(url: string): boolean {
  return url.startsWith('file:') || url.startsWith('/') || url.startsWith('.') || /^[A-Za-z]:[\\/]/.test(url)
}

/** Checks a clone URL's form; returns an error message or null. */
export function checkGitUrl(url: string, allowFileUrls: boolean): string | null {
  if (url.startsWith('-')) return 'must not start with -'
  if (isLocalGitUrl(url)) return allowFileUrls ? null : 'file:// URLs and local paths are disabled on this control plane (connectors.allowFileUrls)'
  // A password in the URL would be stored and shown with the target: credentials go on the account.
  if (/^[a-z+]+:\/\/[^/@\s]*:[^/@\s]*@/i.test(url)) return 'must not contain a password; put the token in the account\'s credentials'
  if (/^(https?|ssh|git):\/\/[^\s]+$/.test(url) || /^[\w.-]+@[\w.-]+:[^\s]+$/.test(url)) return null
  return 'must be an https://, ssh://, git:// or user@host:path URL'
}

interface Run {
  code: number | null
  stdout: Buffer
  stderr: string
}

function run(command: string, args: string[], options: { cwd?: string; env: Record<string, string>; signal: AbortSignal }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => out.push(d))
    child.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000) })
    const onAbort = () => child.kill('SIGKILL')
    options.signal.addEventListener('abort', onAbort, { once: true })
    child.once('error', (error) => {
      options.signal.removeEventListener('abort', onAbort)
      reject(sourceFailure('git_unavailable', `cannot run ${command}: ${error.message}`, false))
    })
    child.once('close', (code) => {
      options.signal.removeEventListener('abort', onAbort)
      resolve({ code, stdout: Buffer.concat(out), stderr })
    })
  })
}

function gitEnv(location: SourceLocation, allowFileUrls: boolean): Record<string, string> {
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'echo', SSH_ASKPASS: 'echo', GIT_SSH_COMMAND: 'ssh -o BatchMode=yes', LC_ALL: 'C' }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'SYSTEMROOT']) if (process.env[name] !== undefined) env[name] = process.env[name]!
  const config: Array<[string, string]> = []
  if (allowFileUrls) config.push(['protocol.file.allow', 'always'])
  if (location.token) config.push(['http.extraHeader', `Authorization: Basic ${Buffer.from(`x-access-token:${location.token}`).toString('base64')}`])
  env.GIT_CONFIG_COUNT = String(config.length)
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key
    env[`GIT_CONFIG_VALUE_${i}`] = value
  })
  return env
}

/** Reads blobs through one `git cat-file --batch`. */
async function readBlobs(command: string, dir: string, env: Record<string, string>, entries: SourceEntry[], signal: AbortSignal): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  if (entries.length === 0) return out
  const result = await new Promise<Buffer>((resolve, reject) => {
    const child = spawn(command, ['cat-file', '--batch'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] })
    const chunks: Buffer[] = []
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => chunks.push(d))
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
    const onAbort = () => child.kill('SIGKILL')
    signal.addEventListener('abort', onAbort, { once: true })
    child.once('error', (error) => reject(sourceFailure('git_unavailable', error.message, false)))
    child.once('close', (code) => {
      signal.removeEventListener('abort', onAbort)
      if (code !== 0) reject(sourceFailure('git_read_failed', shortMessage(stderr || `git cat-file exited with ${code}`), true))
      else resolve(Buffer.concat(chunks))
    })
    child.stdin!.end(entries.map((e) => e.sha).join('\n') + '\n')
  })
  let offset = 0
  for (const entry of entries) {
    const newline = result.indexOf(10, offset)
    const header = result.subarray(offset, newline).toString('utf8')
    const [, type, sizeText] = header.split(' ')
    if (type !== 'blob') throw sourceFailure('git_read_failed', `unexpected object for ${entry.path}: ${header}`, false)
    const size = Number(sizeText)
    out.set(entry.path, result.subarray(newline + 1, newline + 1 + size).toString('utf8'))
    offset = newline + 1 + size + 1
  }
  return out
}

/** A snapshot of a git remote's branch (or default branch). */
export async function gitSnapshot(location: SourceLocation, options: GitOptions, signal: AbortSignal): Promise<SourceSnapshot> {
  const problem = checkGitUrl(location.remoteId, options.allowFileUrls)
  if (problem) throw sourceFailure('invalid_remote', `remoteId ${problem}`, false)
  const env = gitEnv(location, options.allowFileUrls)
  const dir = await mkdtemp(join(tmpdir(), 'svc-git-'))
  const cleanup = () => rm(dir, { recursive: true, force: true })
  try {
    const branchArgs = location.branch ? ['--branch', location.branch] : []
    const clone = await run(options.command, ['clone', '--quiet', '--bare', '--depth', '1', '--single-branch', '--no-tags', ...branchArgs, '--', location.remoteId, dir], { env, signal })
    if (signal.aborted) throw signal.reason
    if (clone.code !== 0) {
      const text = clone.stderr.trim()
      const missingBranch = /Remote branch .* not found/i.test(text)
      throw sourceFailure(missingBranch ? 'branch_not_found' : 'git_fetch_failed', shortMessage(text || `git clone exited with ${clone.code}`), !missingBranch)
    }
    const head = await run(options.command, ['rev-parse', 'HEAD'], { cwd: dir, env, signal })
    if (head.code !== 0) throw sourceFailure('git_read_failed', shortMessage(head.stderr), false)
    const revision = head.stdout.toString('utf8').trim()
    const tree = await run(options.command, ['ls-tree', '-r', '-l', '-z', revision], { cwd: dir, env, signal })
    if (tree.code !== 0) throw sourceFailure('git_read_failed', shortMessage(tree.stderr), false)
    const entries: SourceEntry[] = []
    for (const record of tree.stdout.toString('utf8').split('\0')) {
      if (!record) continue
      const tab = record.indexOf('\t')
      const [, type, sha, size] = record.slice(0, tab).split(/\s+/)
      if (type !== 'blob') continue
      entries.push({ path: record.slice(tab + 1), sha: sha!, size: Number(size) })
    }
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    return { revision, entries, read: (wanted, readSignal) => readBlobs(options.command, dir, env, wanted, readSignal), close: cleanup }
  } catch (error) {
    await cleanup()
    throw error
  }
}
