/**
 * Configured clients for both surfaces: the generated API classes with a base URL, credentials
 * sent under the right scheme only, idempotent writes with 503 retries (resilient-fetch.ts), and
 * typed feeds that resume with `Last-Event-ID` (events.ts).
 * @module
 */
import {
  createClient as createControlPlaneFetch,
  createConfig as controlPlaneConfig,
} from './gen/control-plane/client/index.ts'
import { ControlPlaneApi } from './gen/control-plane/sdk.gen.ts'
import type { ListChangeEventsResponses } from './gen/control-plane/types.gen.ts'
import { createClient as createWorkspaceFetch, createConfig as workspaceConfig } from './gen/workspace/client/index.ts'
import { WorkspaceApi } from './gen/workspace/sdk.gen.ts'
import type { FileCatalogEventsResponses, WorkspaceEventsResponses } from './gen/workspace/types.gen.ts'
import { followEvents, type FollowOptions, type ServerSentEvent } from './events.ts'
import { resilientFetch, type RetryOptions } from './resilient-fetch.ts'

/** A change in the control plane's organization feed. */
export type ChangeEvent = ListChangeEventsResponses[200]['items'][number]
/** A workspace event (reloads, approvals requested and decided). */
export type WorkspaceEvent = WorkspaceEventsResponses[200]['items'][number]
/** A file-catalog event, or `resync` when events were dropped (take a new snapshot). */
export type CatalogEvent = FileCatalogEventsResponses[200]['items'][number] | { resync: true; cursor: number }

/** What a feed helper takes besides the URL. */
export type FeedOptions = Omit<FollowOptions, 'url' | 'headers' | 'fetch'>

/** Control-plane client settings. */
export interface ControlPlaneOptions extends RetryOptions {
  /** The server's origin, e.g. `https://control.example.com`. */
  baseUrl: string
  /** A session token (`sst_…`) from sign-in or sign-up; sent as `Authorization: Bearer`. */
  sessionToken?: string
  /** An organization API key (`svc_…`); sent as `x-api-key`. */
  apiKey?: string
  /** The organization to act in (`X-Service-Org-Id`); sessions only. */
  orgId?: string
}

/** The control plane's operations (the generated `ControlPlaneApi`) plus its change feed. */
export class ControlPlaneClient extends ControlPlaneApi {
  private readonly settings: ControlPlaneOptions
  private readonly transport: typeof fetch

  constructor(options: ControlPlaneOptions) {
    const transport = resilientFetch(options)
    super({
      client: createControlPlaneFetch(
        controlPlaneConfig({
          baseUrl: options.baseUrl,
          fetch: transport,
          headers: options.orgId ? { 'x-service-org-id': options.orgId } : undefined,
          // Each credential under its own scheme only (a key sent as bearer is refused).
          auth: (auth) =>
            auth.type === 'apiKey' ? options.apiKey : auth.scheme === 'bearer' ? options.sessionToken : undefined,
        }),
      ),
    })
    this.settings = options
    this.transport = transport
  }

  /** Request headers carrying this client's credential, for calls made outside the generated methods. */
  credentialHeaders(): Record<string, string> {
    const headers: Record<string, string> = {}
    if (this.settings.apiKey) headers['x-api-key'] = this.settings.apiKey
    else if (this.settings.sessionToken) headers.authorization = `Bearer ${this.settings.sessionToken}`
    if (this.settings.orgId) headers['x-service-org-id'] = this.settings.orgId
    return headers
  }

  /**
   * The organization's change feed as SSE, resumed with `Last-Event-ID` after a drop. Without
   * `lastEventId` it starts at the newest change; pass a page's `next` to continue from a page.
   */
  followChanges(options: FeedOptions = {}): AsyncGenerator<ServerSentEvent<ChangeEvent>> {
    return followEvents<ChangeEvent>({
      ...options,
      url: new URL('/v1/events', this.settings.baseUrl),
      headers: () => this.credentialHeaders(),
      fetch: this.transport,
    })
  }
}

/** Workspace-server client settings. */
export interface WorkspaceOptions extends RetryOptions {
  /** The server's origin, e.g. `http://127.0.0.1:4096`. */
  baseUrl: string
  /** A client token (configured or issued); sent as `Authorization: Bearer`. */
  token?: string
  /** The host token; sent as `X-Service-Host-Token` on host routes (approvals, tokens). */
  hostToken?: string
}

/** The workspace server's operations (the generated `WorkspaceApi`) plus its feeds. */
export class WorkspaceClient extends WorkspaceApi {
  private readonly settings: WorkspaceOptions
  private readonly transport: typeof fetch

  constructor(options: WorkspaceOptions) {
    const transport = resilientFetch(options)
    super({
      client: createWorkspaceFetch(
        workspaceConfig({
          baseUrl: options.baseUrl,
          fetch: transport,
          auth: (auth) =>
            auth.type === 'apiKey' && auth.name === 'X-Service-Host-Token'
              ? options.hostToken
              : auth.scheme === 'bearer'
                ? options.token
                : undefined,
        }),
      ),
    })
    this.settings = options
    this.transport = transport
  }

  /** Request headers carrying this client's credentials. */
  credentialHeaders(): Record<string, string> {
    const headers: Record<string, string> = {}
    if (this.settings.token) headers.authorization = `Bearer ${this.settings.token}`
    if (this.settings.hostToken) headers['x-service-host-token'] = this.settings.hostToken
    return headers
  }

  private follow<T>(path: string, options: FeedOptions): AsyncGenerator<ServerSentEvent<T>> {
    return followEvents<T>({
      ...options,
      url: new URL(path, this.settings.baseUrl),
      headers: () => this.credentialHeaders(),
      fetch: this.transport,
    })
  }

  /** A workspace's events (reloads, approvals), resumed with `Last-Event-ID`. */
  followWorkspace(workspaceId: string, options: FeedOptions = {}): AsyncGenerator<ServerSentEvent<WorkspaceEvent>> {
    return this.follow(`/workspace/${encodeURIComponent(workspaceId)}/events`, options)
  }

  /** Approval requests and decisions of every workspace (host token); pending ones first. */
  followApprovals(options: FeedOptions = {}): AsyncGenerator<ServerSentEvent<WorkspaceEvent>> {
    return this.follow('/approvals/events', options)
  }

  /** A file session's catalog events (`write`, `delete`, `rename`, `mkdir`, or `resync`). */
  followCatalog(sessionId: string, options: FeedOptions = {}): AsyncGenerator<ServerSentEvent<CatalogEvent>> {
    return this.follow(`/files/sessions/${encodeURIComponent(sessionId)}/catalog/events`, options)
  }
}
