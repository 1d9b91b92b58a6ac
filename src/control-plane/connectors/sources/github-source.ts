/**
 * The `github` connector type: the GitHub REST API at a configurable base URL
 * (`connectors.githubApiUrl`, default https://api.github.com; GitHub Enterprise and the test fake
 * use their own). A snapshot resolves the branch to a commit, lists the recursive tree of that
 * commit and reads blobs by sha, a few at a time.
 *
 * 401/403 and 404 are not retried (wrong credential or repository); 429, rate-limit 403s, 5xx and
 * network errors are. Every request has a timeout so a stalled API cannot hold a sync past its
 * deadline.
 * @module
 */
import { Buffer } from 'node:buffer'
import { sourceFailure, type SourceEntry, type SourceLocation, type SourceSnapshot } from './source.ts'

const REQUEST_TIMEOUT_MS = 30_000
const BLOB_CONCURRENCY = 8

/** Checks an `owner/repo` remote id; returns an error message or null. */
export function checkGitHubRepo(remoteId: string): string | null {
  return /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/.test(remoteId) ? null : 'must be owner/repo'
}

async function call<T>(base: string, path: string, token: string | null, signal: AbortSignal): Promise<T> {
  const headers: Record<string, string> = {
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    'user-agent': 'service-server-connector',
  }
  if (token) headers.authorization = `Bearer ${token}`
  let response: Response
  try {
    response = await fetch(`${base}${path}`, {
      headers,
      signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    })
  } catch (error) {
    if (signal.aborted) throw signal.reason
    throw sourceFailure('github_unreachable', `GitHub API unreachable: ${(error as Error).message}`, true)
  }
  if (response.ok) return (await response.json()) as T
  const text = (await response.text()).slice(0, 300)
  const rateLimited =
    response.status === 429 || (response.status === 403 && response.headers.get('x-ratelimit-remaining') === '0')
  if (rateLimited || response.status >= 500)
    throw sourceFailure('github_unavailable', `GitHub API answered ${response.status} for ${path}: ${text}`, true)
  if (response.status === 401 || response.status === 403)
    throw sourceFailure(
      'github_unauthorized',
      `GitHub API refused the credential (${response.status}) for ${path}`,
      false,
    )
  if (response.status === 404)
    throw sourceFailure('github_not_found', `GitHub API has no ${path} (or the credential cannot see it)`, false)
  throw sourceFailure('github_request_failed', `GitHub API answered ${response.status} for ${path}: ${text}`, false)
}

/** A snapshot of a GitHub repository's branch (or default branch). */
export async function githubSnapshot(
  location: SourceLocation,
  apiUrl: string,
  signal: AbortSignal,
): Promise<SourceSnapshot> {
  const problem = checkGitHubRepo(location.remoteId)
  if (problem) throw sourceFailure('invalid_remote', `remoteId ${problem}`, false)
  const repo = `/repos/${location.remoteId}`
  const branch =
    location.branch ?? (await call<{ default_branch: string }>(apiUrl, repo, location.token, signal)).default_branch
  const head = await call<{ commit: { sha: string } }>(
    apiUrl,
    `${repo}/branches/${encodeURIComponent(branch)}`,
    location.token,
    signal,
  )
  const revision = head.commit.sha
  const tree = await call<{
    tree: Array<{ path: string; mode?: string; type: string; sha: string; size?: number }>
    truncated?: boolean
  }>(apiUrl, `${repo}/git/trees/${revision}?recursive=1`, location.token, signal)
  if (tree.truncated)
    throw sourceFailure('github_tree_truncated', 'The repository tree is too large for one GitHub API listing', false)
  const entries: SourceEntry[] = tree.tree
    .filter((e) => e.type === 'blob')
    .map((e) => ({
      path: e.path,
      sha: e.sha,
      size: e.size ?? 0,
      executable: e.mode === '100755',
      symlink: e.mode === '120000',
    }))
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  async function readBytes(wanted: SourceEntry[], readSignal: AbortSignal): Promise<Map<string, Uint8Array>> {
    const out = new Map<string, Uint8Array>()
    let next = 0
    const worker = async () => {
      while (next < wanted.length) {
        const entry = wanted[next++]!
        const blob = await call<{ content: string; encoding: string }>(
          apiUrl,
          `${repo}/git/blobs/${entry.sha}`,
          location.token,
          readSignal,
        )
        out.set(entry.path, new Uint8Array(Buffer.from(blob.content, blob.encoding === 'base64' ? 'base64' : 'utf8')))
      }
    }
    await Promise.all(Array.from({ length: Math.min(BLOB_CONCURRENCY, wanted.length) }, worker))
    return out
  }
  return {
    revision,
    entries,
    async read(wanted, readSignal) {
      const bytes = await readBytes(wanted, readSignal)
      return new Map([...bytes].map(([path, data]) => [path, Buffer.from(data).toString('utf8')]))
    },
    readBytes: (wanted, readSignal) => readBytes(wanted, readSignal),
    close: async () => {},
  }
}
