/**
 * The access token an organization link presents: the current one, and one refresh after a
 * refusal (until a call succeeds again), with the new tokens sealed back into the link's record.
 * A second refusal right after a refresh is the organization's answer, not an expired token.
 * @module
 */
import type { ControlPlaneClient } from './control-plane-client.ts'
import type { LinkRecordSaver } from './link-record-saver.ts'
import type { OrgLinkRecord, OrgLinkStore } from './org-link-state.ts'

/** A link's bearer token and its one refresh. */
export class LinkToken {
  #refreshed = false

  constructor(
    /** The token to present now. */
    public current: string,
    private readonly record: OrgLinkRecord,
    private readonly deps: { client: ControlPlaneClient; store: OrgLinkStore; saver: LinkRecordSaver },
  ) {}

  /** A call succeeded (or the host asked again): the next refusal may try a refresh again. */
  reset(): void {
    this.#refreshed = false
  }

  /** Replaces the token (re-link) and allows a refresh again. */
  replace(token: string): void {
    this.current = token
    this.#refreshed = false
  }

  /** Refreshes once per refusal; false when there is no refresh token, it was tried, or it failed. */
  async tryRefresh(): Promise<boolean> {
    const record = this.record
    if (this.#refreshed || !record.sealedRefreshToken) return false
    this.#refreshed = true
    try {
      const { client, store, saver } = this.deps
      const tokens = await client.refresh(await store.open(record.workspaceId, record.sealedRefreshToken))
      this.current = tokens.accessToken
      const id = record.workspaceId
      record.sealedAccessToken = await store.seal(id, tokens.accessToken)
      if (tokens.refreshToken) record.sealedRefreshToken = await store.seal(id, tokens.refreshToken)
      record.accessExpiresAt = tokens.expiresAt
      await saver.save()
      return true
    } catch {
      return false
    }
  }
}
