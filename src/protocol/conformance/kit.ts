// What every fixture file shares: the names the suite calls, the content the reference server sends,
// and the registrar and hooks the wiring (fixtures.ts) hands each group of fixtures.
import type {
  CallToolResult,
  InputRequiredResult,
  ServerContext,
  StandardSchemaWithJSON,
} from '@modelcontextprotocol/server';
import * as z from 'zod';

/** The plain fixture tools, by the names the suite's scenarios call. */
export const PLAIN_TOOLS = [
  'greet',
  'test_simple_text',
  'test_image_content',
  'test_audio_content',
  'test_embedded_resource',
  'test_multiple_content_types',
  'test_error_handling',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_reconnection',
  'test_logging_tool',
  'test_streaming_elicitation',
  'test_sampling',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'json_schema_2020_12_tool',
  'test_custom_headers',
  'test_missing_capability',
  'test_input_required_result_elicitation',
  'test_input_required_result_sampling',
  'test_input_required_result_list_roots',
  'test_input_required_result_request_state',
  'test_input_required_result_multiple_inputs',
  'test_input_required_result_multi_round',
  'test_input_required_result_tampered_state',
  'test_input_required_result_capabilities',
  'test_trigger_tool_change',
  'test_trigger_prompt_change',
] as const;

/** A 1x1 red PNG and a minimal WAV, as the suite's reference server sends them. */
export const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
export const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

export const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** A JSON Schema published exactly as written (the SDK neither rewrites nor validates it). */
export function rawSchema(json: Record<string, unknown>): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'workflowlookup-conformance',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: () => json, output: () => json },
    },
  } as StandardSchemaWithJSON;
}

export const NO_ARGS = z.object({});

/** Registers one plain fixture tool on the server being wired, under a name the suite calls. */
export type FixtureTool = (
  name: (typeof PLAIN_TOOLS)[number],
  description: string,
  schema: StandardSchemaWithJSON,
  handler: (args: never, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>,
) => void;

export interface FixtureHooks {
  /** Tells every connected client (and 2026-07-28 listen stream) that the tool or prompt list changed. */
  listChanged(kind: 'tools' | 'prompts'): void;
}
