/**
 * Generates an OpenAPI 3.1 document from route declarations, the same ones the router registers
 * (with the subroutes it serves).
 * @module
 */
import { toJsonSchema, type ConversionConfig } from '@valibot/to-json-schema'
import * as v from 'valibot'
import { type ErrorCatalogue, listErrorCodes } from './error-catalogue.ts'
import { impliedErrorStatuses, type SurfaceAuth } from './surface-auth.ts'
import { declaredRoutes, describeResponse, isRawBody, type AnyRoute } from './route.ts'
import type { ValidationPolicy } from './validation.ts'

/** The error body every surface returns, as documented. */
export const ErrorBodySchema = v.pipe(
  v.looseObject({
    code: v.pipe(v.string(), v.description('Stable snake_case error code')),
    message: v.pipe(v.string(), v.description('Human-readable message; may change')),
    details: v.optional(
      v.pipe(
        v.looseObject({
          issues: v.optional(
            v.pipe(
              v.array(
                v.object({
                  path: v.pipe(v.string(), v.description('Dot path of the field at fault; empty for the whole input')),
                  message: v.string(),
                }),
              ),
              v.description('One entry per invalid field (validation errors: 400 and 422)'),
            ),
          ),
        }),
        v.description('Machine-readable context; its other keys depend on `code` (for example `maxBytes`)'),
      ),
    ),
  }),
  v.title('ErrorBody'),
)

/** Document-level settings for {@link buildOpenApi}. */
export interface OpenApiInfo {
  title: string
  version: string
  description: string
  securitySchemes: Record<string, unknown>
  tags?: Array<{ name: string; description: string }>
  /** Every code the surface can answer with; listed on `ErrorBody` as `x-error-codes`. */
  errorCodes?: ErrorCatalogue
}

/**
 * The ErrorBody schema with the surface's catalogue. `code` stays an open string rather than an
 * `enum`: generated clients refuse enum values they do not know, so every new code would break
 * them. The catalogue goes beside it as `x-error-codes` (`{code, status, description}` sorted by
 * status), which documentation tools show and clients can read to map codes to meanings.
 */
function errorBodySchema(catalogue: ErrorCatalogue | undefined): Record<string, unknown> {
  const schema = jsonSchemaOf(ErrorBodySchema)
  if (!catalogue) return schema
  return {
    ...schema,
    description:
      'Every error response. `x-error-codes` lists each `code` this API answers with, its status and meaning.',
    'x-error-codes': listErrorCodes(catalogue),
  }
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  206: 'Partial Content',
  304: 'Not Modified',
  400: 'Bad request',
  401: 'Missing or invalid credentials',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Method not allowed',
  408: 'The request body stopped arriving (request_timeout)',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  416: 'Range not satisfiable',
  422: 'Validation failed',
  429: 'Too many requests',
  499: 'Client closed request',
  500: 'Unexpected server error',
  502: 'Upstream unreachable',
  503: 'Unavailable (server_busy with Retry-After when too many requests are in progress)',
  504: 'Upstream timeout',
}

const HEADERS_TOO_LARGE =
  'Request headers too large: answered by the runtime before routing, without a body (Bun: over 16 KiB)'

/**
 * Limits enforced before any route runs, the same for every operation; stated once here because
 * some are answered by the runtime itself, in its shape rather than ours.
 */
const TRANSPORT_LIMITS = [
  'Limits applied before routing, to every operation:',
  '- 408 `request_timeout` (connection closed) when a request body stops arriving for `SERVICE_BODY_IDLE_TIMEOUT` seconds (default 15).',
  '- 503 `server_busy` with `Retry-After` when the client address already has `SERVICE_MAX_REQUESTS_PER_ADDRESS` requests in progress (default 64), or the server `SERVICE_MAX_REQUESTS` (default 1024, lowered to the open-file limit minus 64). `GET /health` is never refused.',
  '- Idle keep-alive connections close after `SERVICE_IDLE_TIMEOUT` seconds (default 10); event streams are exempt and send heartbeats.',
  '- 400 `invalid_path` for a `.` or `..` path segment, literal or percent-encoded, where the runtime passes the path as sent (Deno); the Bun binary resolves dot segments before the request reaches the server, as a browser would.',
  '- Request headers: the Bun binary refuses more than 16 KiB of request headers in total with a bare `431` (no JSON body, no `X-Request-Id`) and closes headers that take longer than about 10 s; under Deno the limit is about 64 KiB (a bare `400`). These answers come from the runtime before the server sees the request.',
].join('\n')

/** The project's licence (LICENSE, package.json), by its SPDX identifier. */
const LICENSE = { name: 'Apache License 2.0', identifier: 'Apache-2.0' }

const conversion: ConversionConfig = {
  target: 'draft-2020-12',
  // Trim and similar normalising actions have no JSON Schema equivalent; they do not change the wire type.
  ignoreActions: [
    'trim',
    'to_lower_case',
    'to_upper_case',
    'check',
    'partial_check',
    'transform',
    'raw_check',
    'raw_transform',
    'brand',
    'readonly',
    'forward',
    'custom',
  ],
  errorMode: 'ignore',
}

/** Converts a valibot schema to a JSON Schema object without the `$schema` marker. */
export function jsonSchemaOf(schema: v.GenericSchema, mode: 'input' | 'output' = 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = toJsonSchema(schema, { ...conversion, typeMode: mode }) as Record<
    string,
    unknown
  >
  return rest
}

/** `/a/:id/b/:rest+` → `/a/{id}/b/{rest}` */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)\+?/g, '{$1}')
}

function pathParamNames(path: string): string[] {
  return [...path.matchAll(/:(\w+)\+?/g)].map((m) => m[1]!)
}

/** The entries of the object schema a (possibly piped) valibot schema starts with; `{}` for none. */
export function objectEntries(schema: v.GenericSchema | undefined): Record<string, v.GenericSchema> {
  if (!schema) return {}
  let current: any = schema
  // Unwrap pipes to the object schema they start with.
  while (
    current &&
    current.type !== 'object' &&
    current.type !== 'strict_object' &&
    current.type !== 'loose_object' &&
    current.pipe
  )
    current = current.pipe[0]
  return (current?.entries ?? {}) as Record<string, v.GenericSchema>
}

function isOptional(schema: v.GenericSchema): boolean {
  const type = (schema as { type: string }).type
  return type === 'optional' || type === 'exact_optional' || type === 'nullish' || type === 'undefinedable'
}

/**
 * A `text/event-stream` media type whose schema is one event's JSON `data:`; generators that
 * understand SSE (hey-api's `client.sse`) type the stream's items with it.
 */
function eventStreamContent(events: v.GenericSchema): Record<string, unknown> {
  return {
    schema: {
      ...jsonSchemaOf(events),
      description:
        'One Server-Sent Event: `id:` is its seq (send it back as `Last-Event-ID` to resume), `event:` its type, `data:` this JSON. Comment lines are heartbeats.',
    },
  }
}

/** Builds the OpenAPI 3.1 document for a surface. */
export function buildOpenApi<Rule>(
  info: OpenApiInfo,
  routes: ReadonlyArray<AnyRoute<Rule>>,
  auth: SurfaceAuth<Rule, unknown>,
  validation: ValidationPolicy,
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  const errorRef = { $ref: '#/components/schemas/ErrorBody' }
  for (const route of declaredRoutes(routes)) {
    const path = openApiPath(route.path)
    const parameters: unknown[] = []
    const paramSchemas = objectEntries(route.params as v.GenericSchema | undefined)
    for (const name of pathParamNames(route.path)) {
      const schema = paramSchemas[name]
      parameters.push({
        name,
        in: 'path',
        required: true,
        schema: schema ? jsonSchemaOf(schema, 'input') : { type: 'string' },
      })
    }
    for (const [name, schema] of Object.entries(objectEntries(route.query as v.GenericSchema | undefined))) {
      const json = jsonSchemaOf(schema, 'input')
      // Query defaults are the strings the parser sees; an integer parameter documents the number.
      if (json.type === 'integer' && typeof json.default === 'string') json.default = Number(json.default)
      const description = typeof json.description === 'string' ? json.description : undefined
      parameters.push({
        name,
        in: 'query',
        required: !isOptional(schema),
        schema: json,
        ...(description ? { description } : {}),
      })
    }
    const responses: Record<string, unknown> = {}
    for (const [status, spec] of Object.entries(route.responses)) {
      const d = describeResponse(spec)
      const entry: Record<string, unknown> = { description: d.description }
      if (Number(status) !== 204) {
        entry.content = {
          [d.contentType]: d.schema
            ? d.contentType === 'text/event-stream'
              ? eventStreamContent(d.schema)
              : { schema: jsonSchemaOf(d.schema) }
            : d.contentType === 'application/json'
              ? { schema: {} }
              : { schema: { type: 'string', format: d.contentType.startsWith('text/') ? undefined : 'binary' } },
        }
        if (d.events) (entry.content as Record<string, unknown>)['text/event-stream'] = eventStreamContent(d.events)
      }
      if (d.headers)
        entry.headers = Object.fromEntries(
          Object.entries(d.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
        )
      responses[status] = entry
    }
    for (const status of impliedErrorStatuses(route, auth, validation)) {
      responses[String(status)] = {
        description: STATUS_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: errorRef } },
      }
    }
    // The runtime's bare 431 for oversized headers is stated once in the document's description
    // (TRANSPORT_LIMITS), not on each operation: a body-less error response turns every generated
    // client's error type into `unknown`, hiding the ErrorBody every other error carries. Only an
    // operation with no other client error (/health) declares it, so each still names a 4xx.
    // Its body is declared as the empty string it is, which generators type as `string` rather than
    // `unknown` (an `unknown` member would swallow the operation's whole error union).
    if (!Object.keys(responses).some((status) => status.startsWith('4')))
      responses['431'] = {
        description: HEADERS_TOO_LARGE,
        content: { 'text/plain': { schema: { type: 'string', maxLength: 0, description: 'Empty' } } },
      }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      ...(route.tags ? { tags: route.tags } : {}),
      security: auth.security(route.auth),
      ...(parameters.length ? { parameters } : {}),
      responses,
    }
    if (route.body) {
      if (isRawBody(route.body)) {
        operation.requestBody = {
          required: route.body.required ?? true,
          description: route.body.description,
          content: {
            [route.body.contentType]: {
              schema: route.body.schema
                ? jsonSchemaOf(route.body.schema, 'input')
                : { type: 'string', format: 'binary' },
            },
          },
        }
      } else {
        const schema = route.body as v.GenericSchema
        const required = Object.values(objectEntries(schema)).some((s) => !isOptional(s))
        operation.requestBody = { required, content: { 'application/json': { schema: jsonSchemaOf(schema, 'input') } } }
      }
    }
    paths[path] ??= {}
    paths[path]![route.method.toLowerCase()] = operation
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      description: `${info.description}\n\n${TRANSPORT_LIMITS}`,
      license: LICENSE,
    },
    // Relative: clients resolve it against the URL they fetched this document from, which is right
    // behind a proxy or load balancer and for any port, where the listening address would not be.
    servers: [{ url: '/', description: 'The server that served this document' }],
    ...(info.tags ? { tags: info.tags } : {}),
    paths,
    components: { schemas: { ErrorBody: errorBodySchema(info.errorCodes) }, securitySchemes: info.securitySchemes },
  }
}
