import type { CatalogService } from '../../catalogs/catalog-service.js';
import type { ResourceDefinition } from '../resource.js';

/** Seed 003 §3.4: the command and provider catalogs of the enabled imports. */
export function catalogResources(catalogs: CatalogService): ResourceDefinition[] {
  return [
    {
      name: 'command.catalog',
      uri: 'workflowlookup://catalogs/commands',
      title: 'Command catalog',
      description:
        'Every command of the enabled catalogs: run reference, parameters, argument names, body schema',
      read: () => catalogs.commands(),
    },
    {
      name: 'provider.catalog',
      uri: 'workflowlookup://catalogs/providers',
      title: 'Provider catalog',
      description: 'List commands usable as input providers: value and label fields, required parameters',
      read: () => catalogs.providers(),
    },
  ];
}
