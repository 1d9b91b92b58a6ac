/**
 * The control plane's route factory and what route modules receive from the composition root.
 * @module
 */
import { routeFactory } from '../../core/route.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import type { Deps } from '../deps.ts'
import type { SignInThrottle } from '../identity/sign-in-throttle.ts'
import type { ControlPlaneRule } from '../policy.ts'

/** Declares a control-plane route with its schemas inferred. */
export const route = routeFactory<ControlPlaneRule, ControlPlanePrincipal>()

/** What route modules close over. */
export interface RouteContext {
  deps: Deps
  throttle: SignInThrottle
  /** Use the first X-Forwarded-For entry as the client address (behind a trusted proxy only). */
  trustProxy: boolean
  /**
   * The control plane's public URL (`SERVICE_CONTROL_PLANE_PUBLIC_URL` or `workers.publicUrl`),
   * without a trailing slash; when absent, URLs the server hands out are built from the request.
   */
  publicUrl?: string | null
}
