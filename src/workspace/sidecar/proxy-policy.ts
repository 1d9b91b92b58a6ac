/**
 * Who may send what through the sidecar proxy.
 *
 * Every valid token may read. Viewer tokens may only GET/HEAD. Collaborators may do everything a
 * workspace needs, including replying to permission prompts (the reference once limited replies to
 * owners and tool calls hung forever). Routes that act on the whole sidecar rather than this
 * workspace's directory (`/global/*` writes: global config, dispose of every instance, upgrade)
 * need owner scope. A read-only server refuses every non-read.
 * @module
 */
import { ApiError, errors } from '../../core/errors.ts'
import type { Principal } from '../auth.ts'
import { scopeRank } from '../auth.ts'

const READ_METHODS = new Set(['GET', 'HEAD'])

/** Throws the specific 403 when `principal` may not send `method path` through the proxy. */
export function assertProxyAllowed(input: {
  method: string
  path: string
  principal: Principal
  readOnly: boolean
}): void {
  if (READ_METHODS.has(input.method)) return
  if (input.readOnly) throw new ApiError(403, 'read_only', 'Server is read-only')
  if (scopeRank(input.principal.scope) < scopeRank('collaborator')) {
    throw errors.forbidden('Viewer tokens are read-only', { required: 'collaborator', scope: input.principal.scope })
  }
  if (input.path.startsWith('/global/') && input.principal.scope !== 'owner') {
    throw errors.forbidden('Sidecar-wide changes need an owner token', {
      required: 'owner',
      scope: input.principal.scope,
    })
  }
}
