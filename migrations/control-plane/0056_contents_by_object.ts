/**
 * What a plugin or hub holds, by object id within the container: a member's later list page reads
 * the objects of each plugin and hub they see from the page's cursor on (`visibility-sql.ts`,
 * `visibleIdsSql`), a range on these, instead of every object each container holds.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('skill_hub_skill_hub_object_idx')
    .on('skill_hub_skill')
    .columns(['hub_id', 'config_object_id'])
    .execute()
  await db.schema
    .createIndex('plugin_config_object_plugin_object_idx')
    .on('plugin_config_object')
    .columns(['plugin_id', 'config_object_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('plugin_config_object_plugin_object_idx').execute()
  await db.schema.dropIndex('skill_hub_skill_hub_object_idx').execute()
}
