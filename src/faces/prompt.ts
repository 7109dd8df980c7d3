/** One prompt of a face. Arguments are strings (MCP prompts); `completeWorkflowId` offers workflow ids. */
export interface PromptDefinition {
  name: string;
  title: string;
  description: string;
  args: { name: string; description: string; required: boolean; completeWorkflowId?: boolean }[];
  /** The user message(s) the prompt expands to; may throw a DomainFailure. */
  render: (args: Record<string, string | undefined>) => Promise<PromptMessage[]>;
}

export type PromptMessage =
  | { kind: 'text'; text: string }
  | { kind: 'resource'; uri: string; mimeType: string; text: string };
