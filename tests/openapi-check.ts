/**
 * Contract checks shared by the surface suites: the generated OpenAPI document is valid OpenAPI
 * 3.1, and the set of (method, path) pairs the router registered equals the set documented.
 * @module
 */
import { Validator } from '@seriousme/openapi-schema-validator'
import { openApiPath } from '../src/core/openapi.ts'
import { declaredRoutes } from '../src/core/route.ts'
import type { Routable, RouteTable } from '../src/core/router.ts'

/** Validates a document with a standard OpenAPI validator; returns its error list (empty when valid). */
export async function openApiErrors(doc: Record<string, unknown>): Promise<unknown[]> {
  const validator = new Validator()
  const result = await validator.validate(structuredClone(doc))
  return result.valid ? [] : (result.errors as unknown[])
}

interface Declared extends Routable<Declared> {}

/**
 * `METHOD /path/{param}` for every route the router can dispatch to: those it registered and the
 * subroutes they serve (built by the router from the same `subroutes` call).
 */
export function registeredOperations(router: RouteTable): string[] {
  const routes = router.routes.map((entry) => entry.route as Declared)
  return declaredRoutes(routes)
    .map(({ method, path }) => `${method} ${openApiPath(path)}`)
    .sort()
}

/** `METHOD /path/{param}` for every operation the document declares. */
export function documentedOperations(doc: Record<string, unknown>): string[] {
  const out: string[] = []
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(item)) {
      if (['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'].includes(method))
        out.push(`${method.toUpperCase()} ${path}`)
    }
  }
  return out.sort()
}

/** The differences between registered and documented operations, both ways. */
export function operationDrift(
  router: RouteTable,
  doc: Record<string, unknown>,
): { undocumented: string[]; unregistered: string[] } {
  const registered = registeredOperations(router)
  const documented = documentedOperations(doc)
  return {
    undocumented: registered.filter((op) => !documented.includes(op)),
    unregistered: documented.filter((op) => !registered.includes(op)),
  }
}
