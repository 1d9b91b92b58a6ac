/**
 * The server's own calls to a sidecar (health probe, session lookup, reload): credentials and
 * directory applied, a deadline, no redirects, and connection failures turned into 502
 * `sidecar_unreachable` naming the cause.
 * @module
 */
import type { ApiError } from '../../core/errors.ts'
import { basicAuthorization, directoryHeaderValue } from './header-policy.ts'
import type { SidecarTarget } from '../config/sidecar-config.ts'
import { workspaceError } from '../workspace-errors.ts'

/** 502 `sidecar_unreachable` with `details: {path, cause}`; `cause` is a short code such as `ECONNREFUSED` or `timeout`. */
export function unreachable(path: string, cause: string, message: string): ApiError {
  return workspaceError('sidecar_unreachable', `Sidecar unreachable: ${message}`, { details: { path, cause } })
}

/** Options for {@link sidecarFetch}. */
export interface SidecarFetchOptions {
  method?: string
  timeoutMs: number
  signal?: AbortSignal
  /** The error thrown when the deadline passes; default 502 `sidecar_unreachable` with cause `timeout`. */
  onTimeout?: () => ApiError
}

/** Calls `path` on the target's sidecar, pinned to its directory. */
export async function sidecarFetch(
  target: SidecarTarget,
  path: string,
  options: SidecarFetchOptions,
): Promise<Response> {
  if (!target.baseUrl) throw unreachable(path, 'starting', 'The managed sidecar is not running yet')
  const url = new URL(target.baseUrl + path)
  url.searchParams.set('directory', target.directory)
  const headers = new Headers({
    'x-opencode-directory': directoryHeaderValue(target.directory),
    accept: 'application/json',
  })
  const authorization = basicAuthorization(target.username, target.password)
  if (authorization) headers.set('authorization', authorization)
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, options.timeoutMs)
  const onAbort = () => controller.abort()
  options.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    return await fetch(url, { method: options.method ?? 'GET', headers, redirect: 'manual', signal: controller.signal })
  } catch (error) {
    if (timedOut)
      throw (
        options.onTimeout?.() ??
        unreachable(path, 'timeout', `The sidecar did not answer within ${options.timeoutMs} ms`)
      )
    if (options.signal?.aborted) throw workspaceError('request_aborted', 'Client closed the request')
    throw unreachable(path, (error as { code?: string }).code ?? 'connection_failed', (error as Error).message)
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', onAbort)
  }
}
