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
import { type CatalogProvider, CatalogProviderSchema } from './catalog-provider.ts'

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
