/**
 * The workspace data plane's routes (file sessions, inbox, artifacts, export and import) and the
 * service behind them, registered by the composition root with one call.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { AnyRoute } from '../../core/route.ts'
import type { StreamRegistry } from '../../core/sse.ts'
import type { Principal, WorkspaceRule } from '../access/auth.ts'
import { FileService } from '../files/file-service.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { fileRoutes } from './file-routes.ts'
import { inboxRoutes } from './inbox-routes.ts'
import { portabilityRoutes } from './portability-routes.ts'

/** Builds the data-plane service and its routes; `close` stops its watchers. */
export function dataPlane(
  s: WorkspaceServices,
  streams: StreamRegistry,
  logger: Logger,
): { routes: AnyRoute<WorkspaceRule, Principal>[]; files: FileService; close(): void } {
  const files = new FileService(s, s.config.files, logger)
  return {
    files,
    routes: [...fileRoutes(s, files, streams), ...inboxRoutes(s, files), ...portabilityRoutes(s, files, logger)],
    close: () => files.close(),
  }
}
