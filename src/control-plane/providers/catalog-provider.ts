/**
 * The shape of one catalog provider: the schema a catalog file is validated with and the type the
 * embedded data (catalog-data.ts) is written in. Below both, so neither imports the other.
 * @module
 */
import * as v from 'valibot'

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
