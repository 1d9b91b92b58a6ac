/**
 * Both surfaces' OpenAPI documents, built in-process: each app is assembled on a private state
 * directory only to generate its document (nothing listens, no sidecar is configured, no `SERVICE_*`
 * variable is read), so the documents do not depend on the machine. Used by the OpenAPI lint
 * (`lint-openapi.ts`) and the SDK generator (`sdk/generate.ts`).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createControlPlaneApp } from './control-plane/app.ts'
import { loadControlPlaneConfig } from './control-plane/config.ts'
import { silentLogger } from './core/logger.ts'
import { createWorkspaceApp } from './workspace/app.ts'
import { loadWorkspaceConfig } from './workspace/config/server-config.ts'

/** An OpenAPI document as generated (a plain JSON object). */
export type OpenApiDocument = { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> }

/** The two documents, keyed by file name; `dir` must be an empty directory the caller removes. */
export async function buildOpenApiDocuments(dir: string): Promise<{
  'workspace.openapi.json': OpenApiDocument
  'control-plane.openapi.json': OpenApiDocument
}> {
  mkdirSync(join(dir, 'ws'))
  writeFileSync(join(dir, 'server.json'), '{}')
  // A private HOME and no SERVICE_* variables: the documents do not depend on this machine's settings.
  const env = { HOME: dir }
  const workspace = await createWorkspaceApp(
    loadWorkspaceConfig(
      { config: join(dir, 'server.json'), workspace: [join(dir, 'ws')], 'data-dir': join(dir, 'data') },
      env,
      dir,
    ),
    { logger: silentLogger },
  )
  try {
    const controlPlane = await createControlPlaneApp(
      loadControlPlaneConfig({ 'data-dir': join(dir, 'cp') }, env, dir),
      { logger: silentLogger },
    )
    try {
      return {
        'workspace.openapi.json': workspace.openapi() as OpenApiDocument,
        'control-plane.openapi.json': controlPlane.openapi() as OpenApiDocument,
      }
    } finally {
      await controlPlane.close()
    }
  } finally {
    await workspace.close()
  }
}
