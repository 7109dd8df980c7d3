import type { InputSpec } from '../model/workflow.js';
import { deepEqual } from './conditions.js';
import { previewJson } from './json-text.js';

export const INPUT_STATUSES = [
  'provided',
  'default',
  'missing',
  'unset',
  'invalid',
  'prompt',
  'provider_error',
  /** Given, but the workflow declares no such input: leave it out. */
  'undeclared',
] as const;
export type InputStatus = (typeof INPUT_STATUSES)[number];

export interface InputResolution {
  name: string;
  status: InputStatus;
  value?: unknown;
  message?: string;
  choices?: { value: unknown; label: string }[];
}

/** Provider outcomes computed by the caller (it may need HTTP): choices, or why there are none. */
export type ProviderOutcome = { choices: { value: unknown; label: string }[] } | { error: string };

export interface ResolveOptions {
  /** Environment variables inputs may default from (already filtered by the allow-list). */
  env: Record<string, string>;
  /** `matches(pattern, text)` with the server's linear-time regex engine. */
  matches: (pattern: string, text: string) => boolean;
  providers?: Record<string, ProviderOutcome>;
}

function typeError(spec: InputSpec, value: unknown): string | undefined {
  const ok =
    spec.type === 'string'
      ? typeof value === 'string'
      : spec.type === 'number'
        ? typeof value === 'number' && Number.isFinite(value)
        : spec.type === 'integer'
          ? Number.isInteger(value)
          : spec.type === 'boolean'
            ? typeof value === 'boolean'
            : spec.type === 'array'
              ? Array.isArray(value)
              : value !== null && typeof value === 'object' && !Array.isArray(value);
  return ok ? undefined : `must be ${spec.type === 'integer' ? 'an integer' : `a ${spec.type}`}`;
}

/** Why a value does not satisfy its input spec, or undefined when it does. */
export function checkInputValue(
  spec: InputSpec,
  value: unknown,
  matches: ResolveOptions['matches'],
): string | undefined {
  const wrongType = typeError(spec, value);
  if (wrongType) return wrongType;
  if (spec.enum && !spec.enum.some((e) => deepEqual(e, value))) {
    // Bounded: an enum value may be large or deeply nested, and this is only a message.
    return `must be one of ${spec.enum.map((e) => previewJson(e, 200).text).join(', ')}`;
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (spec.minLength !== undefined && length < spec.minLength)
      return `must be at least ${spec.minLength} characters`;
    if (spec.maxLength !== undefined && length > spec.maxLength)
      return `must be at most ${spec.maxLength} characters`;
    if (spec.pattern !== undefined && !matches(spec.pattern, value)) return `must match ${spec.pattern}`;
  }
  if (typeof value === 'number') {
    if (spec.minimum !== undefined && value < spec.minimum) return `must be >= ${spec.minimum}`;
    if (spec.maximum !== undefined && value > spec.maximum) return `must be <= ${spec.maximum}`;
  }
  return undefined;
}

function isEnvDefault(value: unknown): value is { env: string } {
  return value !== null && typeof value === 'object' && Object.keys(value).length === 1 && 'env' in value;
}

/**
 * Applies defaults and checks every input (seed 003 `workflow.resolve_inputs`). `ready` is true only
 * when every required input has a valid value and no provider needs a choice or failed.
 */
export function resolveInputs(
  specs: Record<string, InputSpec> | undefined,
  given: Record<string, unknown>,
  options: ResolveOptions,
): { ready: boolean; values: Record<string, unknown>; inputs: InputResolution[] } {
  const inputs: InputResolution[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs ?? {})) {
    const provider = options.providers?.[name];
    let value: unknown;
    let status: InputStatus;
    if (Object.hasOwn(given, name) && given[name] !== undefined) {
      value = given[name];
      status = 'provided';
    } else if (spec.default !== undefined) {
      if (isEnvDefault(spec.default)) {
        const envName = spec.default.env;
        if (!Object.hasOwn(options.env, envName)) {
          inputs.push({
            name,
            status: 'invalid',
            message: `default reads environment variable ${envName}, which is not allowed (WORKFLOWLOOKUP_ALLOWED_ENV) or not set`,
          });
          continue;
        }
        value = coerce(spec, options.env[envName] as string);
      } else value = spec.default;
      status = 'default';
    } else if (provider && 'error' in provider) {
      inputs.push({ name, status: 'provider_error', message: provider.error });
      continue;
    } else if (provider && 'choices' in provider) {
      inputs.push({
        name,
        status: 'prompt',
        message: 'choose one of the listed values',
        choices: provider.choices,
      });
      continue;
    } else {
      inputs.push(
        spec.required
          ? { name, status: 'missing', message: `input "${name}" is required: ${spec.description}` }
          : { name, status: 'unset' },
      );
      continue;
    }
    const problem = checkInputValue(spec, value, options.matches);
    if (
      problem === undefined &&
      provider &&
      'choices' in provider &&
      !provider.choices.some((c) => deepEqual(c.value, value))
    ) {
      inputs.push({
        name,
        status: 'invalid',
        value,
        message: "is not one of the provider's values",
        choices: provider.choices,
      });
      continue;
    }
    if (problem !== undefined) {
      inputs.push({ name, status: 'invalid', value, message: `${name} ${problem}` });
      continue;
    }
    values[name] = value;
    inputs.push({ name, status, value });
  }
  const unknown = Object.keys(given).filter((k) => !Object.hasOwn(specs ?? {}, k));
  for (const name of unknown)
    inputs.push({
      name,
      status: 'undeclared',
      message: `the workflow declares no input "${name}"; leave it out`,
    });
  const ready = inputs.every(
    (i) => i.status === 'provided' || i.status === 'default' || i.status === 'unset',
  );
  return { ready, values, inputs };
}

/** Environment values are strings; numeric and boolean inputs are parsed from them. */
function coerce(spec: InputSpec, raw: string): unknown {
  if (spec.type === 'number' || spec.type === 'integer') return raw.trim() === '' ? raw : Number(raw);
  if (spec.type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
  if (spec.type === 'array' || spec.type === 'object') {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  return raw;
}
