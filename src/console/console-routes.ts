/**
 * `GET /console` and `GET /console/:path+`: the web console's page and files, the same in both
 * modes. Declared like every other route so they appear in `/openapi.json` and the route tables;
 * they serve static files only, and the console itself calls the documented API like any client.
 * @module
 */
import * as v from 'valibot'
import { lazyModule } from '../core/lazy-module.ts'
import type { AnyRoute } from '../core/route.ts'
import type { ConsoleAsset } from './console-assets.ts'
import { coreError } from '../core/core-errors.ts'

/**
 * Every console response carries this policy: scripts and styles only from this origin (no inline
 * code, no eval), requests only to this origin, never framed. A token typed into the console can
 * then only travel to the server that issued it.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** Headers on every console response, including its 404s. */
export const CONSOLE_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  // The one-time link's code is in the fragment (never sent), and no other page should learn our URLs either.
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
}

/** Hashed names never change content, so browsers may keep them for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable'

const loadAssets = lazyModule(() => import('./console-assets.ts'))

function acceptsGzip(request: Request): boolean {
  const accepted = request.headers.get('accept-encoding') ?? ''
  return /(^|,)\s*gzip\s*(;\s*q=(?!0(\.0*)?\s*(,|$))[\d.]+)?\s*(,|$)/i.test(accepted)
}

function respond(request: Request, file: ConsoleAsset, cacheControl: string): Response {
  const gzip = acceptsGzip(request)
  const body = gzip ? file.gzip : file.body
  return new Response(body as BodyInit, {
    headers: {
      ...CONSOLE_HEADERS,
      'content-type': file.contentType,
      'content-length': String(body.byteLength),
      'cache-control': cacheControl,
      vary: 'accept-encoding',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    },
  })
}

/** The console routes for a surface, public (the page holds no data; the API still asks for credentials). */
export function consoleRoutes<Rule>(publicRule: Rule): AnyRoute<Rule>[] {
  return [
    {
      method: 'GET',
      path: '/console',
      operationId: 'getConsole',
      summary: 'The web console page',
      description:
        'An HTML page that loads the console from `/console/*` and then calls this API with the credentials the user gives it. Never cached; served with a strict Content-Security-Policy.',
      tags: ['console'],
      auth: publicRule,
      responses: { 200: { description: 'The console page', contentType: 'text/html' } },
      handler: async ({ request }) => respond(request, (await loadAssets()).consoleAssets().page, 'no-store'),
    },
    {
      method: 'GET',
      path: '/console/:path+',
      operationId: 'getConsoleFile',
      summary: 'A file of the web console',
      description:
        'Scripts and styles under content-hashed names, cacheable for a year. Unknown names answer 404 `not_found`.',
      tags: ['console'],
      auth: publicRule,
      // No length limit here: a refused parameter would answer 404 without the console headers, and
      // the lookup below is a map read whatever the length.
      params: v.object({ path: v.string() }),
      responses: {
        200: {
          description: 'A console script or style sheet',
          contentType: 'text/javascript',
          headers: { 'cache-control': 'public, max-age=31536000, immutable' },
        },
      },
      errors: [404],
      handler: async ({ request, params }) => {
        const file = (await loadAssets()).consoleAssets().files.get(params.path)
        if (!file)
          throw coreError('not_found', 'No such console file (the console may have been updated: reload)', {
            headers: { ...CONSOLE_HEADERS, 'cache-control': 'no-store' },
          })
        return respond(request, file, IMMUTABLE)
      },
    },
  ]
}
