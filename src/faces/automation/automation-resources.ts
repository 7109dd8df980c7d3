import type { CatalogRegistry } from '../../catalogs/catalog-registry.js';
import type { ResourceDefinition } from '../resource.js';
import { commandCatalog, providerCatalog } from './automation-tools.js';

/** Seed 003 §3.4: the command and provider catalogs of the enabled imports. */
export function catalogResources(catalogs: CatalogRegistry): ResourceDefinition[] {
  return [
    {
      name: 'command.catalog',
      uri: 'workflowlookup://catalogs/commands',
      title: 'Command catalog',
      description:
        'Every command of the enabled catalogs: run reference, parameters, argument names, body schema',
      read: () => commandCatalog(catalogs),
    },
    {
      name: 'provider.catalog',
      uri: 'workflowlookup://catalogs/providers',
      title: 'Provider catalog',
      description: 'List commands usable as input providers: value and label fields, required parameters',
      read: () => providerCatalog(catalogs),
    },
  ];
}
