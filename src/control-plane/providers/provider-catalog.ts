/**
 * The model-provider catalog: the embedded one, or a JSON file named by `llmProviderCatalogFile`
 * (`SERVICE_LLM_PROVIDER_CATALOG`) that replaces it entirely. The file is read and validated once
 * at start-up (a bad file stops start-up with exit code 2 naming the field), so requests never
 * touch the disk or the network.
 * @module
 */
import { readFileSync } from 'node:fs'
import * as v from 'valibot'
import { ConfigError } from '../../core/settings.ts'
import { EMBEDDED_PROVIDER_CATALOG } from './catalog-data.ts'

/** How a provider is called. */
export const API_STYLES = [
  'openai',
  'anthropic',
  'google',
  'openai-compatible',
  'mistral',
  'bedrock',
  'azure-openai',
] as const
/** An API style. */
export type ApiStyle = (typeof API_STYLES)[number]

/** A model in the catalog. */
export const CatalogModelSchema = v.strictObject({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  contextWindow: v.pipe(v.number(), v.integer(), v.minValue(1)),
  reasoning: v.boolean(),
  toolCall: v.boolean(),
})

/** A provider in the catalog. */
export const CatalogProviderSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be lowercase letters, digits and hyphens')),
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  api: v.picklist(API_STYLES),
  baseUrl: v.nullable(v.pipe(v.string(), v.url())),
  env: v.array(v.string()),
  doc: v.nullable(v.pipe(v.string(), v.url())),
  requiresApiKey: v.boolean(),
  models: v.pipe(v.array(CatalogModelSchema), v.minLength(1)),
})
/** A catalog provider. */
export type CatalogProvider = v.InferOutput<typeof CatalogProviderSchema>

const CatalogFileSchema = v.strictObject({ providers: v.pipe(v.array(CatalogProviderSchema), v.minLength(1)) })

/** The catalog in effect, with lookups. */
export interface ProviderCatalog {
  source: 'embedded' | 'file'
  providers: readonly CatalogProvider[]
  find(id: string): CatalogProvider | undefined
}

function catalogOf(providers: CatalogProvider[], source: ProviderCatalog['source']): ProviderCatalog {
  const byId = new Map(providers.map((p) => [p.id, p]))
  return { source, providers, find: (id) => byId.get(id) }
}

/** The embedded catalog, or the file's when a path is given; throws ConfigError on a bad file. */
export function loadProviderCatalog(file: string | null): ProviderCatalog {
  if (!file) return catalogOf(EMBEDDED_PROVIDER_CATALOG, 'embedded')
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new ConfigError(file, '', `cannot read the provider catalog: ${(error as Error).message}`)
  }
  const result = v.safeParse(CatalogFileSchema, parsed)
  if (!result.success) {
    const issue = result.issues[0]!
    throw new ConfigError(file, v.getDotPath(issue) ?? '', issue.message)
  }
  const ids = result.output.providers.map((p) => p.id)
  const duplicate = ids.find((id, i) => ids.indexOf(id) !== i)
  if (duplicate) throw new ConfigError(file, 'providers', `duplicate provider id "${duplicate}"`)
  return catalogOf(result.output.providers, 'file')
}
