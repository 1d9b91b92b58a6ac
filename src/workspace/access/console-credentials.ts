/**
 * The credential resolver that accepts a console session (see `src/console/console-sessions.ts`)
 * as an owner bearer, ahead of the configured and issued tokens.
 * @module
 */
import type { ConsoleSessions } from '../../console/console-sessions.ts'
import type { CredentialResolver } from './auth.ts'

/** Resolves console sessions before the configured and issued tokens. */
export function withConsoleSessions(inner: CredentialResolver, sessions: ConsoleSessions): CredentialResolver {
  return {
    resolveBearer(token) {
      const digest = sessions.check(token)
      if (digest) return { type: 'host', scope: 'owner', tokenHash: digest }
      return inner.resolveBearer(token)
    },
    isHostToken: (token) => inner.isHostToken(token),
  }
}
