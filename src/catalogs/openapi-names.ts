/** Names: catalog ids and command names in kebab-case. */

/** Catalog id from a title: kebab-case, ^[a-z0-9-]+$, 2-64 chars. */
export function catalogIdFromTitle(title: string): string {
  let id = kebab(title, false);
  if (id.length > 64) id = id.slice(0, 64).replace(/-+$/, '');
  if (id.length >= 2) return id;
  return id ? `catalog-${id}` : 'catalog';
}

/**
 * Lower-case words joined by single hyphens; accents are dropped and anything else that is not a letter
 * or digit separates words. With `splitCamel`, `listTasks` and `getHTTPStatus` become `list-tasks` and
 * `get-http-status`.
 */
export function kebab(text: string, splitCamel: boolean): string {
  let s = text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  if (splitCamel) s = s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2');
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}
