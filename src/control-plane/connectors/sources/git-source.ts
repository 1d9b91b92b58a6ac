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
 *
 * A token only goes where the account's owner pointed it: targets of an account with credentials
 * must be https:// URLs on the account's remote host and port, under its path
 * ({@link checkCredentialScope}). Targets are checked when created or changed and again here,
 * right before the token is attached, since a row may predate the rule or the credentials.
 * Redirects are not followed while a token is attached: git re-bases later requests on the
 * redirected URL and would send the header there.
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
  if (isLocalGitUrl(url))
    return allowFileUrls
      ? null
      : 'file:// URLs and local paths are disabled on this control plane (connectors.allowFileUrls)'
  // A password in the URL would be stored and shown with the target: credentials go on the account.
  if (/^[a-z+]+:\/\/[^/@\s]*:[^/@\s]*@/i.test(url))
    return "must not contain a password; put the token in the account's credentials"
  if (/^(https?|ssh|git):\/\/[^\s]+$/.test(url) || /^[\w.-]+@[\w.-]+:[^\s]+$/.test(url)) return null
  return 'must be an https://, ssh://, git:// or user@host:path URL'
}

/**
 * Checks that an account's token may be sent to the clone URL `url`; returns an error message or
 * null. `accountRemoteId` must be an https:// URL; `url` must be https:// too (never plain http),
 * on the same host and port, and its path the account's path or below it (segment-wise; a
 * trailing `/` or `.git` on the account's path is ignored). User info, queries, fragments,
 * backslashes and percent-encoded dots, slashes, backslashes and `@` are refused: URL parsers
 * (WHATWG, curl) and servers disagree on them, so they could change the host or leave the path.
 */
export function checkCredentialScope(accountRemoteId: string, url: string): string | null {
  const account = parseUrl(accountRemoteId)
  if (account?.protocol !== 'https:') {
    return `cannot be used with this account's credentials: the account's remote id is not an https:// URL, so there is no host its token may be sent to (an admin can remove its credentials, or create an account whose remote id is the https:// URL its token is for)`
  }
  const where = `${account.protocol}//${account.host}${account.pathname.replace(/\/+$/, '')}`
  const target = parseUrl(url)
  if (target?.protocol === 'http:')
    return `must not be a plain http:// URL: the account has credentials, which are never sent unencrypted; use https://`
  if (target?.protocol !== 'https:' || !/^https:\/\//i.test(url))
    return `must be an https:// URL under ${where}, the account's remote, because the account has credentials`
  // `host` is the lower-cased host name, with `:port` unless the port is the scheme's default.
  if (target.host !== account.host)
    return `must be on ${account.host}, the account's host, because the account has credentials`
  if (/[@?#\\]|%(2e|2f|5c|40)/i.test(url.slice('https://'.length))) {
    return 'must not contain user info, a query, a fragment, backslashes or percent-encoded dots, slashes, backslashes or @ when the account has credentials'
  }
  const prefix = account.pathname.replace(/\/+$/, '').replace(/\.git$/, '')
  const path = target.pathname.replace(/\/+$/, '')
  if (prefix !== '' && path !== prefix && path !== `${prefix}.git` && !path.startsWith(`${prefix}/`)) {
    return `must be under ${where}, the account's remote, because the account has credentials`
  }
  return null
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text)
  } catch {
    return null
  }
}

interface Run {
  code: number | null
  stdout: Buffer
  stderr: string
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env: Record<string, string>; signal: AbortSignal },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => out.push(d))
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000)
    })
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
  const env: Record<string, string> = {
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'echo',
    SSH_ASKPASS: 'echo',
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes',
    LC_ALL: 'C',
  }
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'SYSTEMROOT'])
    if (process.env[name] !== undefined) env[name] = process.env[name]!
  const config: Array<[string, string]> = []
  if (allowFileUrls) config.push(['protocol.file.allow', 'always'])
  if (location.token) {
    config.push([
      'http.extraHeader',
      `Authorization: Basic ${Buffer.from(`x-access-token:${location.token}`).toString('base64')}`,
    ])
    // git re-bases later requests on a redirect's target and sends extra headers there too.
    config.push(['http.followRedirects', 'false'])
  }
  env.GIT_CONFIG_COUNT = String(config.length)
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key
    env[`GIT_CONFIG_VALUE_${i}`] = value
  })
  return env
}

/** Reads blobs (as bytes) through one `git cat-file --batch`. */
async function readBlobs(
  command: string,
  dir: string,
  env: Record<string, string>,
  entries: SourceEntry[],
  signal: AbortSignal,
): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>()
  if (entries.length === 0) return out
  const result = await new Promise<Buffer>((resolve, reject) => {
    const child = spawn(command, ['cat-file', '--batch'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] })
    const chunks: Buffer[] = []
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => chunks.push(d))
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    const onAbort = () => child.kill('SIGKILL')
    signal.addEventListener('abort', onAbort, { once: true })
    child.once('error', (error) => reject(sourceFailure('git_unavailable', error.message, false)))
    child.once('close', (code) => {
      signal.removeEventListener('abort', onAbort)
      if (code !== 0)
        reject(sourceFailure('git_read_failed', shortMessage(stderr || `git cat-file exited with ${code}`), true))
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
    out.set(entry.path, new Uint8Array(result.subarray(newline + 1, newline + 1 + size)))
    offset = newline + 1 + size + 1
  }
  return out
}

/** A snapshot of a git remote's branch (or default branch). */
export async function gitSnapshot(
  location: SourceLocation,
  options: GitOptions,
  signal: AbortSignal,
): Promise<SourceSnapshot> {
  const problem = checkGitUrl(location.remoteId, options.allowFileUrls)
  if (problem) throw sourceFailure('invalid_remote', `remoteId ${problem}`, false)
  if (location.token) {
    // Again at sync time: the target may predate the rule or the account's credentials.
    const scope = checkCredentialScope(location.accountRemoteId, location.remoteId)
    if (scope) throw sourceFailure('remote_outside_account', `remoteId ${scope}`, false)
  }
  const env = gitEnv(location, options.allowFileUrls)
  const dir = await mkdtemp(join(tmpdir(), 'svc-git-'))
  const cleanup = () => rm(dir, { recursive: true, force: true })
  try {
    const branchArgs = location.branch ? ['--branch', location.branch] : []
    const clone = await run(
      options.command,
      [
        'clone',
        '--quiet',
        '--bare',
        '--depth',
        '1',
        '--single-branch',
        '--no-tags',
        ...branchArgs,
        '--',
        location.remoteId,
        dir,
      ],
      { env, signal },
    )
    if (signal.aborted) throw signal.reason
    if (clone.code !== 0) {
      const text = clone.stderr.trim()
      const missingBranch = /Remote branch .* not found/i.test(text)
      throw sourceFailure(
        missingBranch ? 'branch_not_found' : 'git_fetch_failed',
        shortMessage(text || `git clone exited with ${clone.code}`),
        !missingBranch,
      )
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
      const [mode, type, sha, size] = record.slice(0, tab).split(/\s+/)
      if (type !== 'blob') continue
      entries.push({
        path: record.slice(tab + 1),
        sha: sha!,
        size: Number(size),
        executable: mode === '100755',
        symlink: mode === '120000',
      })
    }
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    return {
      revision,
      entries,
      read: async (wanted, readSignal) => {
        const bytes = await readBlobs(options.command, dir, env, wanted, readSignal)
        return new Map([...bytes].map(([path, data]) => [path, Buffer.from(data).toString('utf8')]))
      },
      readBytes: (wanted, readSignal) => readBlobs(options.command, dir, env, wanted, readSignal),
      close: cleanup,
    }
  } catch (error) {
    await cleanup()
    throw error
  }
}
