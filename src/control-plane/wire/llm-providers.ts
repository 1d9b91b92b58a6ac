/**
 * Wire schemas of the model-provider catalog and provider records. Provider responses never
 * carry the key: `hasApiKey` says whether one is stored; only the credential route returns it.
 * @module
 */
import * as v from 'valibot'
import { API_STYLES, CatalogProviderSchema } from '../providers/catalog-provider.ts'
import { idOf, itemOf, nameField, pageOf, Timestamp } from './common.ts'

/** A provider of the model catalog. */
export const CatalogProvider = v.pipe(CatalogProviderSchema, v.title('CatalogProvider'))
/** A page of CatalogProvider. */
export const CatalogProviderPage = pageOf(CatalogProvider, 'CatalogProviderPage')
/** `{item}` with one CatalogProvider. */
export const CatalogProviderItem = itemOf(CatalogProvider, 'CatalogProviderItem')

const Model = v.strictObject({ id: v.string(), name: v.string() })
/** A provider record. */
export const LlmProvider = v.pipe(
  v.strictObject({
    id: idOf('llm'),
    name: v.string(),
    source: v.picklist(['catalog', 'custom']),
    catalogProviderId: v.nullable(v.string()),
    baseUrl: v.nullable(v.string()),
    api: v.picklist(API_STYLES),
    models: v.array(Model),
    hasApiKey: v.boolean(),
    createdByMemberId: v.nullable(idOf('mem')),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('LlmProvider'),
)
/** A page of LlmProvider. */
export const LlmProviderPage = pageOf(LlmProvider, 'LlmProviderPage')
/** `{item}` with one LlmProvider. */
export const LlmProviderItem = itemOf(LlmProvider, 'LlmProviderItem')

const ModelInput = v.union([
  v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  v.strictObject({
    id: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
    name: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
  }),
])
const Custom = v.strictObject({
  baseUrl: v.pipe(
    v.string(),
    v.url('must be a URL'),
    v.regex(/^https?:\/\//, 'must be an http(s) URL'),
    v.maxLength(1024),
  ),
  api: v.picklist(API_STYLES, `must be one of ${API_STYLES.join(', ')}`),
})
const ApiKeyField = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(8192),
  v.description('Stored encrypted; never returned except by the credential route'),
)
const Fields = {
  name: nameField(255),
  catalogProviderId: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  custom: v.optional(Custom),
  models: v.pipe(v.array(ModelInput), v.minLength(1, 'give at least one model'), v.maxLength(500)),
}
/** Create body: exactly one of `catalogProviderId` or `custom`. */
export const CreateLlmProviderBody = v.pipe(
  v.strictObject({ ...Fields, apiKey: v.optional(ApiKeyField) }),
  v.check(
    (b) => (b.catalogProviderId === undefined) !== (b.custom === undefined),
    'give exactly one of catalogProviderId or custom',
  ),
)
/** Update body: any field; `apiKey: null` removes the key, omitted keeps it. */
export const UpdateLlmProviderBody = v.pipe(
  v.strictObject({
    name: v.optional(Fields.name),
    catalogProviderId: Fields.catalogProviderId,
    custom: Fields.custom,
    models: v.optional(Fields.models),
    apiKey: v.optional(v.nullable(ApiKeyField)),
  }),
  v.check((b) => Object.keys(b).length > 0, 'give at least one field to change'),
  v.check(
    (b) => b.catalogProviderId === undefined || b.custom === undefined,
    'give at most one of catalogProviderId or custom',
  ),
)
/** The credential: shown only to explicit grantees, audited. */
export const LlmProviderCredential = v.pipe(
  v.strictObject({
    item: v.strictObject({
      llmProviderId: idOf('llm'),
      api: v.picklist(API_STYLES),
      baseUrl: v.nullable(v.string()),
      apiKey: v.string(),
    }),
  }),
  v.title('LlmProviderCredential'),
)
