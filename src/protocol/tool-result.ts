import type { ToolDefinition } from '../faces/tool.js';

/**
 * The text copy of a result: one line for a person (the answer's `message`, or the tool's summary),
 * then the result as compact JSON without that message, so nothing in it is said twice. Results the
 * faces hand out repeatedly (the cached workflow list) are serialized once.
 */
const textCache = new WeakMap<object, string>();
function textOf(tool: ToolDefinition, result: Record<string, unknown>): string {
  let text = textCache.get(result);
  if (text === undefined) {
    const { message, ...rest } = result;
    text =
      typeof message === 'string'
        ? `${message}\n${JSON.stringify(rest)}`
        : `${tool.summarize?.(result as never) ?? tool.title}\n${JSON.stringify(result)}`;
    textCache.set(result, text);
  }
  return text;
}

/** A successful tools/call result: the structured answer and its text copy. */
export function toolResult(tool: ToolDefinition, structured: Record<string, unknown>) {
  return {
    content: [{ type: 'text' as const, text: textOf(tool, structured) }],
    structuredContent: structured,
  };
}
