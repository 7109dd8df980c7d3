import { UriTemplate, type Variables } from '@modelcontextprotocol/server';
import type { ResourceDefinition } from '../faces/resource.js';

/**
 * The SDK matches `{?a,b}` only when every query parameter is present, in order. This template
 * matches the path part with the SDK and reads any subset of the declared query parameters, in any
 * order; path variables never swallow a query string.
 */
export class QueryTolerantTemplate extends UriTemplate {
  private readonly path: UriTemplate;
  private readonly queryNames: string[];

  constructor(template: string) {
    super(template);
    const query = /\{\?([^}]*)\}$/.exec(template);
    this.queryNames = query?.[1]?.split(',').map((n) => n.trim()) ?? [];
    this.path = new UriTemplate(query ? template.slice(0, query.index) : template);
  }

  override match(uri: string): Variables | null {
    const q = uri.indexOf('?');
    const vars = this.path.match(q === -1 ? uri : uri.slice(0, q));
    if (vars === null) return null;
    const params = new URLSearchParams(q === -1 ? '' : uri.slice(q + 1));
    for (const name of this.queryNames) {
      const value = params.get(name);
      if (value !== null) vars[name] = value;
    }
    return vars;
  }
}

export interface ResolvedResource {
  resource: ResourceDefinition;
  /** The URI as the SDK hands it to the read callback (after `new URL()`). */
  url: URL;
  variables: Record<string, string>;
}

export function flatVariables(variables: Record<string, string | string[]>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([k, v]) => [k, Array.isArray(v) ? (v[0] ?? '') : v]),
  );
}

/**
 * The resources of a server, resolved exactly as the SDK's resources/read resolves them: the text goes
 * through `new URL()` (which lower-cases the scheme, trims spaces, removes `.` and `..` segments), then
 * a fixed URI must equal the result, else the templates are tried in registration order. Whatever
 * decides about a URI (scopes, subscriptions) asks this, so it decides about the resource that would
 * be read, never about the spelling.
 */
export class ResourceIndex {
  private readonly fixed = new Map<string, ResourceDefinition>();
  private readonly templates: { resource: ResourceDefinition; template: QueryTolerantTemplate }[] = [];
  private readonly byTemplateText = new Map<string, ResourceDefinition>();

  private static readonly built = new WeakMap<readonly ResourceDefinition[], ResourceIndex>();

  /** The index of an app's resources, built once (the templates are stateless and shared). */
  static of(resources: readonly ResourceDefinition[]): ResourceIndex {
    let index = ResourceIndex.built.get(resources);
    if (index === undefined) {
      index = new ResourceIndex(resources);
      ResourceIndex.built.set(resources, index);
    }
    return index;
  }

  constructor(resources: readonly ResourceDefinition[]) {
    for (const resource of resources) {
      if (!resource.uri.includes('{')) {
        this.fixed.set(resource.uri, resource);
        continue;
      }
      const template = new QueryTolerantTemplate(resource.uri);
      this.templates.push({ resource, template });
      this.byTemplateText.set(template.toString(), resource);
    }
  }

  /** The template object registered for a templated resource (the SDK matches with it). */
  templateOf(resource: ResourceDefinition): QueryTolerantTemplate | undefined {
    return this.templates.find((t) => t.resource === resource)?.template;
  }

  resolve(uri: string): ResolvedResource | undefined {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      return undefined;
    }
    const href = url.toString();
    const fixed = this.fixed.get(href);
    if (fixed !== undefined) return { resource: fixed, url, variables: {} };
    for (const { resource, template } of this.templates) {
      let variables: Variables | null;
      try {
        variables = template.match(href);
      } catch {
        return undefined; // over the SDK's length limits: it cannot match either
      }
      if (variables) return { resource, url, variables: flatVariables(variables) };
    }
    return undefined;
  }

  /** The templated resource whose template text is exactly `text` (as completion/complete refers to it). */
  templateNamed(text: string): ResourceDefinition | undefined {
    return this.byTemplateText.get(text);
  }
}
