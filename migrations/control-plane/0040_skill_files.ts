/**
 * Skills are folders: each version keeps the files beside SKILL.md (JSON text of
 * `[{path, contentBase64, executable}]`, portable to any database) and a content hash over the
 * whole folder, so an unchanged skill (same SKILL.md, same files, same executable bits) adds no
 * version. Both are null for versions written before and for types other than skills.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('config_object_version').addColumn('files', 'text').execute()
  await db.schema.alterTable('config_object_version').addColumn('content_hash', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('config_object_version').dropColumn('content_hash').execute()
  await db.schema.alterTable('config_object_version').dropColumn('files').execute()
}
