/**
 * `/v1/config-objects`: objects, versions, resolved form, lifecycle and access.
 * @module
 */
import * as v from 'valibot'
import { actorOf } from '../auth.ts'
import { changeLifecycle, createConfigObject, getConfigObject, listConfigObjects } from '../catalog/config-objects.ts'
import { addVersion, getLatestVersion, getResolved, getVersion, listVersions } from '../catalog/config-versions.ts'
import { addObjectToPlugin, listObjectPlugins, removeObjectFromPlugin } from '../catalog/memberships.ts'
import { importLimits, importSkillZip } from '../catalog/skill-import.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { AddObjectPluginBody, ObjectPluginItem, ObjectPluginPage } from '../wire/catalog.ts'
import { idParams } from '../wire/common.ts'
import {
  AddVersionBody,
  ConfigObjectItem,
  ConfigObjectListQuery,
  ConfigObjectPage,
  ConfigObjectVersionItem,
  ConfigObjectVersionPage,
  CreateConfigObjectBody,
  ResolvedConfigObjectItem,
  SkillImportQuery,
  SkillImportResult,
} from '../wire/config-objects.ts'
import { accessRoutes } from './access-routes.ts'
import { route, type RouteContext } from './route.ts'
import { readZipBody } from './zip-body.ts'

const ObjectParams = idParams(['configObjectId', 'cob'])
const VersionParams = idParams(['configObjectId', 'cob'], ['versionId', 'cov'])
const ObjectPluginParams = idParams(['configObjectId', 'cob'], ['pluginId', 'plg'])
const TAG = 'config-objects'

/** Config-object routes. */
export function configObjectRoutes(ctx: RouteContext) {
  const lifecycle = (action: 'archive' | 'delete' | 'restore', summary: string) =>
    route({
      method: 'POST',
      path: `/v1/config-objects/:configObjectId/${action}`,
      operationId: `${action}ConfigObject`,
      tags: [TAG],
      summary,
      description:
        'Manager. Moves: archive active → archived; delete active|archived → deleted (soft, history kept); restore archived|deleted → active. Any other move is 409 `invalid_lifecycle_transition` with `details.status`.',
      auth: rules.org('config_objects.write'),
      params: ObjectParams,
      responses: { 200: ConfigObjectItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await changeLifecycle(ctx.deps, actorOf(principal), params.configObjectId, action),
      }),
    })
  return [
    // Before any `/v1/config-objects/:configObjectId` route, so `import` is never read as an id.
    route({
      method: 'POST',
      path: '/v1/config-objects/import',
      operationId: 'importSkillZip',
      tags: [TAG],
      summary: 'Upload skill folders as a zip: each becomes a new skill or a new version of the skill with its name',
      description:
        'Body: the archive (`Content-Type: application/zip`, else 415 `unsupported_media_type`). It holds a SKILL.md at its root or one folder per skill (`<name>/SKILL.md` with its scripts, references and assets; the folder name must equal the frontmatter name, 422 `zip_skill_name_mismatch`). A folder becomes a new object (source mode `import`, the uploader gets a manager grant) or, when one visible skill has that name, a new version of it (editor needed; 409 `skill_name_ambiguous` when several do); an unchanged folder adds no version (`action: "unchanged"`). Executable bits come from the Unix mode of each entry. Everything is imported in one transaction or nothing is. `?preview=true` does the same work, rolls it back and answers what it would do. Refused archives: 413 `zip_too_large` (archive bytes), 413 `zip_bomb` (inflated bytes), 413 `skill_file_too_large` / `skill_too_large`, 422 `zip_too_many_entries`, `skill_too_many_files`, `zip_entry_escapes` (`..`, absolute or backslash names), `zip_entry_symlink`, `zip_entry_not_file`, `zip_duplicate_entry`, `zip_duplicate_skill`, `zip_no_skill`, `zip_nested_skill`, `zip_entry_outside_skill`, `invalid_zip`; a SKILL.md that is not a valid skill is 422 `validation_failed` with `details.reason`. Limits are configured under `skills` in the config file.',
      auth: rules.org('config_objects.write'),
      query: SkillImportQuery,
      body: {
        raw: true,
        contentType: 'application/zip',
        description: 'A zip archive of one skill folder or several',
        required: true,
      },
      responses: { 200: SkillImportResult },
      errors: [403, 409, 413, 415, 422],
      handler: async ({ request, principal, query }) => {
        const zip = await readZipBody(request, importLimits(ctx.deps).maxZipBytes)
        return importSkillZip(ctx.deps, actorOf(principal), zip, { preview: query.preview === 'true' })
      },
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects',
      operationId: 'listConfigObjects',
      tags: [TAG],
      summary: 'Config objects the caller can see, oldest first, filtered in the database',
      description:
        'Deleted objects are hidden unless `deleted=include|only`. `q` matches objects where every word is a prefix of a word in the title, description or latest content.',
      auth: rules.org('config_objects.read'),
      query: ConfigObjectListQuery,
      responses: { 200: ConfigObjectPage },
      errors: [400],
      handler: ({ principal, query }) =>
        listConfigObjects(ctx.deps, actorOf(principal), {
          ...query,
          pluginId: query.plugin,
          connectorInstanceId: query.connectorInstance,
        }),
    }),
    route({
      method: 'POST',
      path: '/v1/config-objects',
      operationId: 'createConfigObject',
      tags: [TAG],
      summary: 'Create a config object with its first version',
      description:
        'The source is validated for the type (422 `validation_failed` naming the field, with `details.reason`, e.g. `invalid_skill_name`). The creator gets a manager grant. Each `pluginIds` entry needs the editor role on that plugin.',
      auth: rules.org('config_objects.write'),
      body: CreateConfigObjectBody,
      responses: { 201: ConfigObjectItem },
      errors: [409],
      handler: async ({ principal, body }) => ({ item: await createConfigObject(ctx.deps, actorOf(principal), body) }),
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects/:configObjectId',
      operationId: 'getConfigObject',
      tags: [TAG],
      summary: 'One config object with a summary of its latest version (no payloads)',
      auth: rules.org('config_objects.read'),
      params: ObjectParams,
      responses: { 200: ConfigObjectItem },
      handler: async ({ principal, params }) => ({
        item: await getConfigObject(ctx.deps, actorOf(principal), params.configObjectId),
      }),
    }),
    route({
      method: 'POST',
      path: '/v1/config-objects/:configObjectId/versions',
      operationId: 'addConfigObjectVersion',
      tags: [TAG],
      summary: 'Append a version (editor); history is never overwritten',
      description:
        '409 `version_conflict` (with `details.latestVersionId`) when `baseVersionId` is not the latest version; 409 `config_object_deleted` for a deleted object.',
      auth: rules.org('config_objects.write'),
      params: ObjectParams,
      body: AddVersionBody,
      responses: { 201: ConfigObjectVersionItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await addVersion(ctx.deps, actorOf(principal), params.configObjectId, body),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects/:configObjectId/versions',
      operationId: 'listConfigObjectVersions',
      tags: [TAG],
      summary: 'Version history, newest first',
      auth: rules.org('config_objects.read'),
      params: ObjectParams,
      query: v.object(pageQuery()),
      responses: { 200: ConfigObjectVersionPage },
      errors: [400],
      handler: ({ principal, params, query }) =>
        listVersions(ctx.deps, actorOf(principal), params.configObjectId, query),
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects/:configObjectId/versions/latest',
      operationId: 'getLatestConfigObjectVersion',
      tags: [TAG],
      summary: 'The latest version',
      auth: rules.org('config_objects.read'),
      params: ObjectParams,
      responses: { 200: ConfigObjectVersionItem },
      handler: async ({ principal, params }) => ({
        item: await getLatestVersion(ctx.deps, actorOf(principal), params.configObjectId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects/:configObjectId/versions/:versionId',
      operationId: 'getConfigObjectVersion',
      tags: [TAG],
      summary: 'One version',
      auth: rules.org('config_objects.read'),
      params: VersionParams,
      responses: { 200: ConfigObjectVersionItem },
      handler: async ({ principal, params }) => ({
        item: await getVersion(ctx.deps, actorOf(principal), params.configObjectId, params.versionId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects/:configObjectId/resolved',
      operationId: 'getResolvedConfigObject',
      tags: [TAG],
      summary: 'What a runtime consumes: the latest version normalized, with the files it installs',
      description: '409 `config_object_not_active` (with `details.status`) for archived or deleted objects.',
      auth: rules.org('config_objects.read'),
      params: ObjectParams,
      responses: { 200: ResolvedConfigObjectItem },
      errors: [409],
      handler: async ({ principal, params }) => ({
        item: await getResolved(ctx.deps, actorOf(principal), params.configObjectId),
      }),
    }),
    route({
      method: 'GET',
      path: '/v1/config-objects/:configObjectId/plugins',
      operationId: 'listConfigObjectPlugins',
      tags: [TAG],
      summary: 'The plugins containing the object (only those the caller can see)',
      auth: rules.org('config_objects.read'),
      params: ObjectParams,
      query: v.object(pageQuery()),
      responses: { 200: ObjectPluginPage },
      errors: [400],
      handler: ({ principal, params, query }) =>
        listObjectPlugins(ctx.deps, actorOf(principal), params.configObjectId, query),
    }),
    route({
      method: 'POST',
      path: '/v1/config-objects/:configObjectId/plugins',
      operationId: 'addConfigObjectToPlugin',
      tags: [TAG],
      summary: 'Add the object to a plugin (editor on the plugin)',
      description: '409 `already_in_plugin`.',
      auth: rules.org('plugins.write'),
      params: ObjectParams,
      body: AddObjectPluginBody,
      responses: { 201: ObjectPluginItem },
      errors: [409],
      handler: async ({ principal, params, body }) => ({
        item: await addObjectToPlugin(ctx.deps, actorOf(principal), params.configObjectId, body.pluginId),
      }),
    }),
    route({
      method: 'DELETE',
      path: '/v1/config-objects/:configObjectId/plugins/:pluginId',
      operationId: 'removeConfigObjectFromPlugin',
      tags: [TAG],
      summary: 'Remove the object from a plugin (editor on the plugin)',
      auth: rules.org('plugins.write'),
      params: ObjectPluginParams,
      responses: { 204: { description: 'Removed' } },
      handler: ({ principal, params }) =>
        removeObjectFromPlugin(ctx.deps, actorOf(principal), params.configObjectId, params.pluginId),
    }),
    lifecycle('archive', 'Archive a config object (manager)'),
    lifecycle('delete', 'Delete a config object (soft; manager)'),
    lifecycle('restore', 'Restore an archived or deleted config object (manager)'),
    ...accessRoutes(ctx, {
      type: 'config_object',
      base: '/v1/config-objects/:configObjectId',
      param: 'configObjectId',
      prefix: 'cob',
      noun: 'ConfigObject',
      tag: TAG,
      read: 'config_objects.read',
      write: 'config_objects.write',
    }),
  ]
}
