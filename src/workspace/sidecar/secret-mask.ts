/**
 * The sidecar's answers that carry `opencode.json(c)` content, masked for principals below the
 * owner (the rule in `config/config-secret-view.ts`): OpenCode's merged config (`GET /config`),
 * file reads, VCS and session diffs, and text search. The rows of the allow-list that need it name
 * how (`secrets` in `route-table.ts`). The answer is read (bounded like filtered search answers),
 * masked and rebuilt; failed and non-JSON answers of JSON routes pass unchanged.
 * @module
 */
import { maskMcpMap } from '../config/mcp-maps.ts'
import { workspaceConfigSecrets } from '../config/config-secret-view.ts'
import { isOpencodeConfigPath, maskConfigDiff, maskConfigText, maskSecretsIn } from '../../opencode/mcp-secret-text.ts'
import { MAX_FILTERED_BYTES } from './result-filter.ts'
import { workspaceError } from '../workspace-errors.ts'

/** How a row's answer shows config content: see the module doc. */
export type SecretView = 'config' | 'file' | 'diff' | 'diff-raw' | 'search'

type Secrets = Array<{ secret: string; mask: string }>

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

async function maskDiffItem(item: unknown, secrets: Secrets): Promise<unknown> {
  if (!isRecord(item)) return item
  const out = { ...item }
  const ofConfig = typeof out.file === 'string' && isOpencodeConfigPath(out.file)
  if (typeof out.patch === 'string') out.patch = maskConfigDiff(out.patch, secrets, ofConfig)
  for (const side of ['before', 'after'] as const)
    if (typeof out[side] === 'string')
      out[side] = ofConfig ? await maskConfigText(out[side] as string) : maskSecretsIn(out[side] as string, secrets)
  return out
}

async function maskJson(view: SecretView, body: unknown, secrets: Secrets, askedPath: string | null): Promise<unknown> {
  switch (view) {
    case 'config':
      return isRecord(body) && 'mcp' in body ? { ...body, mcp: maskMcpMap(body.mcp) } : body
    case 'file': {
      if (!isRecord(body) || !askedPath || !isOpencodeConfigPath(askedPath)) return body
      const out = { ...body }
      if (typeof out.content === 'string') out.content = await maskConfigText(out.content)
      for (const key of ['diff', 'patch'] as const)
        if (typeof out[key] === 'string') out[key] = maskConfigDiff(out[key] as string, secrets, true)
      return out
    }
    case 'diff':
      return Array.isArray(body) ? Promise.all(body.map((item) => maskDiffItem(item, secrets))) : body
    case 'diff-raw':
      return typeof body === 'string' ? maskConfigDiff(body, secrets) : body
    case 'search':
      return body
  }
}

/**
 * `response` as a principal below the owner may see it. `askedPath` is the file a read names (its
 * `path` query or tail), `directory` the workspace directory whose config holds the secrets.
 */
export async function secretMaskedResponse(
  view: SecretView,
  response: Response,
  directory: string,
  headers: Headers,
  askedPath: string | null,
): Promise<Response> {
  if (!response.ok || !response.body) return new Response(response.body, { status: response.status, headers })
  const declared = Number(response.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared > MAX_FILTERED_BYTES) {
    await response.body.cancel().catch(() => {})
    throw workspaceError('sidecar_response_too_large', 'The answer is too large to mask its secrets')
  }
  const text = await response.text()
  if (text.length > MAX_FILTERED_BYTES)
    throw workspaceError('sidecar_response_too_large', 'The answer is too large to mask its secrets')
  const secrets = await workspaceConfigSecrets(directory)
  // Search answers quote file lines inside JSON strings: each secret may appear escaped once more.
  const everywhere = [
    ...secrets,
    ...secrets.map(({ secret, mask }) => ({ secret: JSON.stringify(secret).slice(1, -1), mask })),
  ]
  headers.delete('content-length')
  const isJson = (response.headers.get('content-type') ?? '').includes('json')
  let out: string
  if (isJson) {
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      throw workspaceError('sidecar_response_failed', 'The sidecar answered with invalid JSON')
    }
    out = maskSecretsIn(JSON.stringify(await maskJson(view, body, secrets, askedPath)), everywhere)
  } else if (view === 'diff-raw') out = maskConfigDiff(text, secrets)
  else if (view === 'file' && askedPath && isOpencodeConfigPath(askedPath)) out = await maskConfigText(text)
  else out = maskSecretsIn(text, everywhere)
  return new Response(out, { status: response.status, headers })
}
