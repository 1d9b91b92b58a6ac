/**
 * Wire schemas of SCIM provisioning: the owner's token routes (`/v1/org/scim-tokens`, the API's
 * usual strict shapes) and, for the document, the SCIM resources as RFC 7643 defines them (loose:
 * SCIM clients ignore attributes they do not know, and so do these schemas).
 * @module
 */
import * as v from 'valibot'
import { idOf, nameField, Timestamp } from './common.ts'

/** `POST /v1/org/scim-tokens`. */
export const CreateScimTokenBody = v.strictObject({
  name: v.pipe(nameField(120), v.description('What the token is for, e.g. "Okta" or "Microsoft Entra"')),
})

/** A SCIM token as listed (never the token). */
export const ScimToken = v.strictObject({
  id: idOf('sct'),
  name: v.string(),
  start: v.pipe(v.string(), v.description('The first characters of the token, to recognise it')),
  createdAt: Timestamp,
  lastUsedAt: v.nullable(Timestamp),
})

/** The created token, with its plaintext (this answer only). */
export const CreatedScimToken = v.strictObject({
  item: ScimToken,
  token: v.pipe(
    v.string(),
    v.description('The SCIM bearer token (prefix scim_); shown once, store it in the identity provider'),
  ),
})

/** The organization's SCIM tokens. */
export const ScimTokenList = v.strictObject({ items: v.array(ScimToken) })

const meta = v.looseObject({
  resourceType: v.string(),
  created: v.optional(v.string()),
  lastModified: v.optional(v.string()),
  location: v.string(),
  version: v.optional(v.pipe(v.string(), v.description('Weak ETag; send it as If-Match to update only that version'))),
})

/** A SCIM User (RFC 7643 §4.1). */
export const ScimUser = v.pipe(
  v.looseObject({
    schemas: v.array(v.string()),
    id: v.string(),
    externalId: v.optional(v.string()),
    userName: v.pipe(v.string(), v.description("The person's email address")),
    name: v.optional(
      v.looseObject({
        givenName: v.optional(v.string()),
        familyName: v.optional(v.string()),
        formatted: v.optional(v.string()),
      }),
    ),
    displayName: v.optional(v.string()),
    emails: v.optional(
      v.array(v.looseObject({ value: v.string(), type: v.optional(v.string()), primary: v.optional(v.boolean()) })),
    ),
    active: v.boolean(),
    meta,
  }),
  v.title('ScimUser'),
)

/** A SCIM Group (RFC 7643 §4.2): a team. */
export const ScimGroup = v.pipe(
  v.looseObject({
    schemas: v.array(v.string()),
    id: v.string(),
    externalId: v.optional(v.string()),
    displayName: v.string(),
    members: v.optional(
      v.array(
        v.pipe(
          v.looseObject({ value: v.pipe(v.string(), v.description('A User id')), display: v.optional(v.string()) }),
          v.description("Also carries `type` (User) and `$ref` (the User's location)"),
        ),
      ),
    ),
    meta,
  }),
  v.title('ScimGroup'),
)

/** A SCIM list response (RFC 7644 §3.4.2). */
export function scimListOf<T extends v.GenericSchema>(resource: T, title: string) {
  return v.pipe(
    v.looseObject({
      schemas: v.array(v.string()),
      totalResults: v.number(),
      startIndex: v.number(),
      itemsPerPage: v.number(),
      Resources: v.array(resource),
    }),
    v.title(title),
  )
}

/** A SCIM error (RFC 7644 §3.12); `code` and `message` are this API's usual fields. */
export const ScimErrorBody = v.pipe(
  v.looseObject({
    schemas: v.array(v.string()),
    status: v.pipe(v.string(), v.description('The HTTP status, as a string')),
    scimType: v.optional(v.string()),
    detail: v.string(),
    code: v.string(),
    message: v.string(),
  }),
  v.title('ScimError'),
)

/** A discovery resource (ServiceProviderConfig, ResourceType, Schema). */
export const ScimDiscovery = v.looseObject({ schemas: v.array(v.string()) })

/** A PATCH request (RFC 7644 §3.5.2). */
export const ScimPatchRequest = v.pipe(
  v.looseObject({
    schemas: v.optional(v.array(v.string())),
    Operations: v.pipe(
      v.array(
        v.looseObject({
          op: v.pipe(v.string(), v.description('add, replace or remove, in any case')),
          path: v.optional(v.string()),
          value: v.optional(v.unknown()),
        }),
      ),
      v.maxLength(100),
    ),
  }),
  v.title('ScimPatchRequest'),
)

/** A User as POST and PUT send it; attributes not listed are accepted and ignored. */
export const ScimUserRequest = v.pipe(
  v.looseObject({
    schemas: v.optional(v.array(v.string())),
    userName: v.pipe(v.string(), v.maxLength(254), v.description("The person's email address")),
    externalId: v.optional(v.pipe(v.string(), v.maxLength(255))),
    name: v.optional(v.looseObject({ givenName: v.optional(v.string()), familyName: v.optional(v.string()) })),
    displayName: v.optional(v.pipe(v.string(), v.maxLength(200))),
    emails: v.optional(
      v.pipe(
        v.array(v.looseObject({ value: v.string(), type: v.optional(v.string()), primary: v.optional(v.boolean()) })),
        v.maxLength(10),
      ),
    ),
    active: v.optional(
      v.pipe(v.union([v.boolean(), v.string()]), v.description('A boolean, or "True"/"False" (default true)')),
    ),
  }),
  v.title('ScimUserRequest'),
)

/** A Group as POST and PUT send it. */
export const ScimGroupRequest = v.pipe(
  v.looseObject({
    schemas: v.optional(v.array(v.string())),
    displayName: v.pipe(v.string(), v.maxLength(120)),
    externalId: v.optional(v.pipe(v.string(), v.maxLength(255))),
    members: v.optional(
      v.pipe(v.array(v.looseObject({ value: v.pipe(v.string(), v.description('A User id')) })), v.maxLength(1000)),
    ),
  }),
  v.title('ScimGroupRequest'),
)
