/**
 * What each surface hands to the entry point: a Fetch handler plus lifecycle hooks.
 * @module
 */
import type { DirectRoute } from './http-app.ts'
import type { PeerLookup } from './peer-address.ts'
import type { RouteTable } from './router.ts'
import type { StreamRegistry } from './sse.ts'

/** A running surface (workspace server or control plane), independent of the HTTP listener. */
export interface Surface {
  readonly mode: 'workspace' | 'control-plane'
  /** Handles one request; the listener passes a lazy peer-address lookup (absent in-process). */
  fetch(request: Request, peer?: PeerLookup): Response | Promise<Response>
  /** Routes the listener may answer by path itself (see `HttpApp.direct`). */
  readonly direct?: ReadonlyArray<DirectRoute>
  /** The compiled route table (tests compare it with the document). */
  readonly router: RouteTable
  /** The generated OpenAPI document. */
  openapi(): Record<string, unknown>
  readonly streams: StreamRegistry
  /** Called once the listener is bound: lines for stdout after the listening line (e.g. generated tokens). */
  onListening?(address: { host: string; port: number }): string[]
  /**
   * Shutdown's first step, while the listener still answers: settle work that is waiting on
   * someone (writes waiting for host approval get 503 `server_stopping`). Optional.
   */
  beginStop?(): Promise<void>
  /** Ends streams, stops background work and closes storage. Safe to call twice. */
  close(): Promise<void>
}
