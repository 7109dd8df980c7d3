import { workflowJsonSchema } from '../model/workflow.js';

type Schema = Record<string, unknown>;

/** Schemas followed at each level: unions of unions stay cheap however the schema grows. */
const MAX_FRONTIER = 64;

/** Each schema generated once, on the first unknown property it is asked about. */
const generated = new Map<() => Schema, { root: Schema; defs: Record<string, Schema> }>();

/** Follows `$ref` and flattens `anyOf` / `oneOf` / `allOf` into the schemas a value may match. */
function alternatives(schema: unknown, out: Schema[], defs: Record<string, Schema>, depth = 0): Schema[] {
  if (schema === null || typeof schema !== 'object' || depth > 16 || out.length >= MAX_FRONTIER) return out;
  const s = schema as Schema;
  const ref = s.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/$defs/')) {
    alternatives(defs[ref.slice('#/$defs/'.length)], out, defs, depth + 1);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = s[key];
    if (Array.isArray(list)) for (const branch of list) alternatives(branch, out, defs, depth + 1);
  }
  if (s.properties !== undefined || s.items !== undefined || s.additionalProperties !== undefined)
    out.push(s);
  return out;
}

/**
 * The property names the workflow JSON Schema (or another: a test file's) allows on the object at `path` of a definition (every
 * alternative of a union: a step may be a prompt, loop or command step). For "did you mean" hints on
 * unknown properties; the schema is generated once, on the first unknown property.
 */
export function propertyNamesAt(
  path: readonly PropertyKey[],
  schema: () => Schema = workflowJsonSchema,
): string[] {
  let known = generated.get(schema);
  if (known === undefined) {
    const root = schema();
    known = { root, defs: (root.$defs ?? {}) as Record<string, Schema> };
    generated.set(schema, known);
  }
  const { root, defs } = known;
  let frontier = alternatives(root, [], defs);
  for (const segment of path) {
    const next: Schema[] = [];
    for (const schema of frontier) {
      const properties = schema.properties as Record<string, unknown> | undefined;
      const named = typeof segment === 'string' ? properties?.[segment] : undefined;
      if (named !== undefined) alternatives(named, next, defs);
      else if (typeof segment === 'number' && schema.items !== undefined)
        alternatives(schema.items, next, defs);
      else if (typeof schema.additionalProperties === 'object')
        alternatives(schema.additionalProperties, next, defs);
      if (next.length >= MAX_FRONTIER) break;
    }
    frontier = next;
    if (frontier.length === 0) return [];
  }
  return [...new Set(frontier.flatMap((s) => Object.keys((s.properties as object | undefined) ?? {})))];
}
