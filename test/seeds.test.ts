// Every literal request/response example of seeds 001, 002 and 004 (../shared/seeds/), sent as raw
// JSON-RPC to the app in-process, so no later change can drop a tool, a field or a schema they show.
// The seeds' example workflows are fixtures (test/fixtures/seeds/), written to match the examples.
// An answer conforms to an example when it has every field the example shows, with the same JSON type
// (recursively, list items against the example's first item); fields whose value the request or the
// fixture decides are compared as values too.
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcess } from './helpers/in-process.js';
import { FIXTURES, type Sandbox, sandbox } from './helpers/server.js';

type Json = Record<string, any>;

const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Every field of `example` is in `actual` with the same JSON type; returns the mismatches by path. */
function mismatches(actual: unknown, example: unknown, path = ''): string[] {
  if (kind(actual) !== kind(example))
    return [`${path || '/'}: ${kind(actual)} where the seed has ${kind(example)}`];
  if (Array.isArray(example) && Array.isArray(actual)) {
    if (example.length === 0) return [];
    return actual.flatMap((item, i) => mismatches(item, example[0], `${path}/${i}`));
  }
  if (kind(example) !== 'object') return [];
  return Object.entries(example as Json).flatMap(([key, value]) =>
    Object.hasOwn(actual as Json, key)
      ? mismatches((actual as Json)[key], value, `${path}/${key}`)
      : [`${path}/${key}: missing`],
  );
}

function conforms(actual: unknown, example: unknown): void {
  expect(mismatches(actual, example)).toEqual([]);
}

let sb: Sandbox;
let host: Awaited<ReturnType<typeof inProcess>>;
let seen = 0;
let ids = 0;

/** Sends one message and returns the answer with its id. */
async function send(message: Json): Promise<Json> {
  host.send(message);
  for (;;) {
    const answers = await host.read(seen + 1);
    const found = answers.slice(seen).find((a) => a.id === message.id);
    seen = answers.length;
    if (found) return found;
  }
}

/** Each tool's published output schema, compiled: every structured answer of this file must pass it. */
const outputChecks = new Map<string, (value: unknown) => boolean>();
const canonicalName = (name: string) => name.replace('.', '_');

async function rpc(id: unknown, method: string, params?: unknown): Promise<Json> {
  const answer = await send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
  const name = method === 'tools/call' ? canonicalName((params as Json).name) : undefined;
  const structured = answer.result?.structuredContent;
  if (name !== undefined && structured !== undefined && answer.result.isError !== true) {
    const check = outputChecks.get(name) as ((value: unknown) => boolean) & { errors?: unknown };
    expect(check, `${name} has a published output schema`).toBeDefined();
    expect(check(structured), `${name}: ${JSON.stringify(check.errors)}`).toBe(true);
  }
  return answer;
}
const call = async (name: string, args: Json) =>
  (await rpc(`call-${++ids}-${name}`, 'tools/call', { name, arguments: args })).result.structuredContent;
const read = async (uri: string) =>
  JSON.parse((await rpc(`read-${++ids}`, 'resources/read', { uri })).result.contents[0].text);

beforeAll(async () => {
  sb = sandbox();
  cpSync(join(FIXTURES, 'seeds'), sb.runtime, { recursive: true });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  host = await inProcess(sb);
});

afterAll(async () => {
  await host.close();
  sb.cleanup();
});

describe('seed 001: handshake, tool discovery, errors, lifecycle', () => {
  it('Initialize Request / Response', async () => {
    const answer = await send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2024-11-05',
        capabilities: { tools: {} },
        clientInfo: { name: 'claude-desktop', version: '1.0.0' },
      },
    });
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 1 });
    conforms(answer.result, {
      protocolVersion: '2024-11-05',
      capabilities: {
        tools: { listChanged: false, notifyProgress: false },
        resources: { listChanged: false },
      },
      serverInfo: {
        name: 'workflowlookup',
        version: '1.0.0',
        description: 'Workflow Orchestration System MCP Server',
      },
    });
    expect(answer.result.protocolVersion).toBe('2024-11-05');
    expect(answer.result.serverInfo).toMatchObject({
      name: 'workflowlookup',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      description: 'Workflow Orchestration System MCP Server',
    });
    host.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  });

  it('Initialize Error Cases: unsupported version, missing protocolVersion', async () => {
    expect((await rpc(1, 'initialize', { protocolVersion: '2024-10-01', capabilities: {} })).error).toEqual({
      code: -32000,
      message: 'Unsupported protocol version',
      data: { supportedVersions: expect.arrayContaining(['2024-11-05']), requestedVersion: '2024-10-01' },
    });
    expect((await rpc(1, 'initialize', { capabilities: {} })).error).toEqual({
      code: -32602,
      message: 'Invalid params',
      data: { details: 'protocolVersion is required' },
    });
  });

  it('Tools List Request / Response: the four tools with input and output schemas', async () => {
    const answer = await rpc(2, 'tools/list', {});
    const tools: Json[] = answer.result.tools;
    const ajv = new Ajv2020({ strict: false });
    for (const tool of tools) outputChecks.set(tool.name, ajv.compile(tool.outputSchema));
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ['workflow_list', 'workflow_get', 'workflow_next', 'workflow_validate']) {
      expect(byName[name], name).toBeDefined();
      conforms(byName[name], { name, description: '', inputSchema: {}, outputSchema: {} });
      expect(byName[name].inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(byName[name].outputSchema.type).toBe('object');
    }
    const id = { type: 'string', minLength: 3, maxLength: 64, pattern: expect.any(String) };
    expect(byName.workflow_list.inputSchema.required ?? []).toEqual([]);
    expect(byName.workflow_list.outputSchema).toMatchObject({
      properties: {
        workflows: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              name: { type: 'string' },
              description: { type: 'string' },
              category: { type: 'string' },
              version: { type: 'string' },
            },
            required: ['id', 'name', 'description', 'category', 'version'],
          },
        },
      },
      required: expect.arrayContaining(['workflows']),
    });
    expect(byName.workflow_get.inputSchema).toMatchObject({ properties: { id }, required: ['id'] });
    expect(byName.workflow_next.inputSchema).toMatchObject({
      properties: {
        workflowId: id,
        currentStep: id,
        completedSteps: {
          type: 'array',
          items: { type: 'string', pattern: expect.any(String) },
          uniqueItems: true,
        },
        context: { type: 'object' },
      },
      required: expect.arrayContaining(['workflowId', 'completedSteps']),
    });
    expect(byName.workflow_next.inputSchema.required).toHaveLength(2);
    expect(byName.workflow_next.outputSchema).toMatchObject({
      properties: {
        step: { type: expect.arrayContaining(['object']) },
        guidance: { type: 'object' },
        isComplete: { type: 'boolean' },
      },
      required: expect.arrayContaining(['step', 'guidance', 'isComplete']),
    });
    expect(byName.workflow_validate.inputSchema).toMatchObject({
      properties: { workflowId: id, stepId: id, output: { type: 'string', minLength: 1 } },
      required: ['workflowId', 'stepId', 'output'],
    });
    expect(byName.workflow_validate.outputSchema).toMatchObject({
      properties: {
        valid: { type: 'boolean' },
        issues: { type: 'array', items: { type: 'string' } },
        suggestions: { type: 'array', items: { type: 'string' } },
      },
      required: expect.arrayContaining(['valid']),
    });
    // Seed 002: complete input/output schemas, for every tool listed.
    for (const tool of tools) {
      expect(tool.inputSchema?.type, tool.name).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
    }
  });

  it('tool examples: workflow_list, workflow_get, workflow_next, workflow_validate', async () => {
    const list = await rpc(3, 'workflow_list', {});
    expect(list.result.workflows).toContainEqual({
      id: 'ai-task-implementation',
      name: 'AI Task Prompt Workflow',
      description: 'Guides through task understanding → planning → implementation → verification',
      category: 'development',
      version: '1.0.0',
    });
    const got = await rpc(4, 'workflow_get', { id: 'ai-task-implementation' });
    // The seed's example shows one step: the first step is compared with it.
    conforms(
      { ...got.result, steps: got.result.steps.slice(0, 1) },
      {
        id: 'ai-task-implementation',
        name: 'AI Task Prompt Workflow',
        description: 'Complete task implementation with verification',
        preconditions: ['Task description is clear and complete'],
        steps: [
          {
            id: 'understand',
            title: 'Deep understanding of task and codebase',
            prompt: 'Analyze the task description...',
            requireConfirmation: true,
          },
        ],
      },
    );
    expect(got.result.steps[0]).toMatchObject({
      id: 'understand',
      title: 'Deep understanding of task and codebase',
      prompt: 'Analyze the task description...',
      requireConfirmation: true,
    });
    expect(got.result.preconditions).toEqual(['Task description is clear and complete']);
    const next = await rpc(5, 'workflow_next', {
      workflowId: 'ai-task-implementation',
      completedSteps: [],
      context: { taskId: 'TASK-123' },
    });
    conforms(next.result, {
      step: { id: 'understand', title: 'Understand the task', prompt: 'Analyze the requirements...' },
      guidance: { prompt: 'PREP: ... IMPLEMENT: ... VERIFY: ...' },
      isComplete: false,
    });
    expect(next.result.step.id).toBe('understand');
    expect(next.result.isComplete).toBe(false);
    const validated = await rpc(6, 'workflow_validate', {
      workflowId: 'ai-task-implementation',
      stepId: 'understand',
      output: 'I have analyzed the requirements.',
    });
    expect(validated.result).toEqual({ valid: true, issues: [], suggestions: [] });
  });

  it('Error Response Examples: method not found, invalid params, not found', async () => {
    // The parse error (-32700, id null) needs bytes that are not JSON: test/protocol.test.ts sends them
    // over stdio.
    expect((await rpc(3, 'non_existent_tool', {})).error).toEqual({
      code: -32601,
      message: 'Method not found',
      data: { method: 'non_existent_tool' },
    });
    const invalid = await rpc(4, 'workflow_next', { completedSteps: [] });
    expect(invalid.error).toMatchObject({ code: -32602, message: 'Invalid params' });
    expect(invalid.error.data.details).toMatch(/workflowId/);
    const missing = await rpc(5, 'workflow_get', { id: 'nonexistent-workflow' });
    expect(missing.error).toMatchObject({
      code: -32001,
      message: 'Workflow not found',
      data: { workflowId: 'nonexistent-workflow' },
    });
    const step = await rpc(6, 'workflow_next', {
      workflowId: 'ai-task-implementation',
      currentStep: 'nonexistent-step',
      completedSteps: [],
    });
    expect(step.error).toMatchObject({
      code: -32003,
      message: 'Step not found',
      data: { stepId: 'nonexistent-step' },
    });
  });
});

describe('seed 002: the tool API and its example session', () => {
  const criteriaContext = { taskScope: 'large', userExpertise: 'expert', complexity: 0.8 };

  it('workflow_list with params null', async () => {
    const answer = await rpc(1, 'workflow_list', null);
    conforms(answer.result, {
      workflows: [
        { id: 'string', name: 'string', description: 'string', category: 'string', version: 'string' },
      ],
    });
    const session = await rpc('list-1', 'workflow_list', null);
    expect(session.id).toBe('list-1');
    expect(session.result.workflows).toContainEqual({
      id: 'ai-task-implementation',
      name: 'AI Task Prompt Workflow',
      description: 'Guides through task understanding → planning → implementation → verification',
      category: 'development',
      version: '1.0.0',
    });
  });

  it('workflow_get: every field the response shows', async () => {
    const answer = await rpc(2, 'workflow_get', { id: 'ai-task-implementation' });
    conforms(
      { ...answer.result, steps: answer.result.steps.slice(0, 1) },
      {
        id: 'string',
        name: 'string',
        description: 'string',
        preconditions: ['string'],
        clarificationPrompts: ['string'],
        steps: [{ id: 'string', title: 'string', prompt: 'string', requireConfirmation: true }],
        metaGuidance: ['string'],
      },
    );
    conforms(answer.result.steps[1], {
      id: 'string',
      title: 'string',
      prompt: 'string',
      askForFiles: false,
      requireConfirmation: false,
      runCondition: {},
    });
    const session = await rpc('get-1', 'workflow_get', { id: 'ai-task-implementation' });
    expect(session.result.steps[0]).toMatchObject({
      id: 'understand',
      title: 'Deep understanding of task and codebase',
      prompt: 'Analyze the task description...',
      requireConfirmation: true,
    });
  });

  it('workflow_next: step, guidance and isComplete; runCondition skips', async () => {
    const answer = await rpc(3, 'workflow_next', {
      workflowId: 'ai-task-implementation',
      currentStep: 'understand',
      completedSteps: ['understand'],
      context: criteriaContext,
    });
    conforms(answer.result, {
      step: {
        id: 'string',
        title: 'string',
        prompt: 'string',
        askForFiles: false,
        requireConfirmation: false,
        runCondition: {},
      },
      guidance: {
        prompt: 'string',
        modelHint: 'string',
        requiresConfirmation: false,
        validationCriteria: [],
      },
      isComplete: false,
    });
    expect(answer.result.step).toMatchObject({
      id: 'plan',
      runCondition: { var: 'taskScope', equals: 'large' },
    });
    // The runCondition is false for a small task: the step is skipped, the next eligible one returned.
    const small = await rpc('3b', 'workflow_next', {
      workflowId: 'ai-task-implementation',
      completedSteps: ['understand'],
      context: { taskScope: 'small' },
    });
    expect(small.result.step.id).toBe('implement');
    const session = await rpc('next-1', 'workflow_next', {
      workflowId: 'ai-task-implementation',
      completedSteps: [],
      context: { taskId: 'TASK-123' },
    });
    expect(session.result.step).toMatchObject({
      id: 'understand',
      title: 'Deep understanding of task and codebase',
      prompt: 'Analyze the task description...',
      requireConfirmation: true,
    });
    expect(session.result.guidance).toMatchObject({
      prompt: expect.stringContaining('Analyze the task description...'),
      modelHint: 'model-with-strong-reasoning',
      requiresConfirmation: true,
      validationCriteria: [
        'Clear understanding of requirements',
        'Identified affected files',
        'Documented assumptions',
      ],
    });
    expect(session.result.isComplete).toBe(false);
  });

  it('workflow_validate: the request and response, basic and context-aware', async () => {
    const answer = await rpc(4, 'workflow_validate', {
      workflowId: 'ai-task-implementation',
      stepId: 'understand',
      output: 'I understood the task.',
      context: criteriaContext,
    });
    conforms(answer.result, { valid: true, issues: ['string'], suggestions: ['string'] });
    expect(
      await rpc('validate-1', 'workflow_validate', {
        workflowId: 'auth-implementation',
        stepId: 'create-middleware',
        output:
          'Created JWT authentication middleware that extracts tokens from Authorization header and returns 401 for invalid tokens.',
      }),
    ).toEqual({ jsonrpc: '2.0', id: 'validate-1', result: { valid: true, issues: [], suggestions: [] } });
    expect(
      await rpc('validate-2', 'workflow_validate', {
        workflowId: 'adaptive-development',
        stepId: 'implementation',
        output: 'Implemented basic feature functionality with standard patterns.',
        context: { userExpertise: 'expert', complexity: 0.9, taskScope: 'large' },
      }),
    ).toEqual({
      jsonrpc: '2.0',
      id: 'validate-2',
      result: {
        valid: false,
        issues: [
          'Expert implementation should use advanced patterns',
          'Complex tasks require optimization considerations',
        ],
        suggestions: [
          'Review validation criteria and adjust output accordingly.',
          'Consider adding architectural patterns for expert-level implementation.',
        ],
      },
    });
  });

  it('the example session: validate with context, the failed validation, the error', async () => {
    expect(
      await rpc('validate-1', 'workflow_validate', {
        workflowId: 'auth-implementation',
        stepId: 'implement-login',
        output:
          'Created POST /auth/login endpoint that accepts email and password, validates credentials against database using bcrypt, and returns JWT token with 24h expiration on success.',
        context: { security: 'high', environment: 'production' },
      }),
    ).toEqual({ jsonrpc: '2.0', id: 'validate-1', result: { valid: true, issues: [], suggestions: [] } });
    expect(
      await rpc('validate-2', 'workflow_validate', {
        workflowId: 'adaptive-development',
        stepId: 'expert-implementation',
        output: 'Implemented feature using basic CRUD operations with standard MVC pattern.',
        context: { userExpertise: 'expert', complexity: 0.9, taskScope: 'large' },
      }),
    ).toEqual({
      jsonrpc: '2.0',
      id: 'validate-2',
      result: {
        valid: false,
        issues: [
          'Expert implementation should use advanced patterns',
          'Should include optimizations for complex features',
        ],
        suggestions: [
          'Review validation criteria and adjust output accordingly.',
          'Consider adding architectural patterns like Repository, Strategy, or Observer for expert-level implementation.',
        ],
      },
    });
    const error = await rpc('error-1', 'workflow_get', { id: 'non-existent-workflow' });
    expect(error).toMatchObject({
      jsonrpc: '2.0',
      id: 'error-1',
      error: { code: -32001, message: 'Workflow not found', data: { workflowId: 'non-existent-workflow' } },
    });
  });

  it('JSON Schema validation, context-aware rules and logical composition', async () => {
    const schema = (output: string) =>
      rpc(`schema-${output.length}`, 'workflow_validate', {
        workflowId: 'adaptive-development',
        stepId: 'design-endpoint',
        output,
      });
    expect((await schema('{"endpoint": "/api/users", "method": "GET"}')).result.valid).toBe(true);
    expect((await schema('{"endpoint": "/users", "method": "FETCH"}')).result).toMatchObject({
      valid: false,
      issues: expect.arrayContaining([
        expect.stringContaining('API endpoint must follow required structure'),
      ]),
    });
    const login = (output: string) =>
      rpc(`login-${output.length}`, 'workflow_validate', {
        workflowId: 'auth-implementation',
        stepId: 'implement-login',
        output,
        context: { security: 'low' },
      });
    expect((await login('login endpoint issuing a session cookie')).result.valid).toBe(true);
    expect((await login('login endpoint with basic auth')).result.valid).toBe(false);
  });

  it('Error Cases: -32003 for an unknown step id', async () => {
    const answer = await rpc(5, 'workflow_validate', {
      workflowId: 'auth-implementation',
      stepId: 'no-such-step',
      output: 'x',
    });
    expect(answer.error).toMatchObject({ code: -32003, message: 'Step not found' });
  });
});

describe('seed 004: resources and tools of durable executions', () => {
  let started: Json;

  it('available_workflows and workflow_details', async () => {
    const available = await read('workflowlookup://workflow/available_workflows');
    const entry = available.find((w: Json) => w.name === 'feature-development');
    conforms(entry, {
      name: 'feature-development',
      description: 'Complete feature development workflow from design to deployment',
      tags: ['workflows'],
      complexity: 'high',
      phases: [{ phase: 'design', agent: 'architect', description: 'System design and technical decisions' }],
    });
    expect(entry.description).toBe('Complete feature development workflow from design to deployment');
    expect(entry.phases.map((p: Json) => [p.phase, p.agent])).toEqual([
      ['design', 'architect'],
      ['implement', 'implementer'],
      ['review', 'reviewer'],
    ]);
    const details = await read('workflowlookup://workflow/workflow_details/feature-development');
    conforms(details, {
      name: 'feature-development',
      description: 'Complete feature development workflow...',
      content: '# Full markdown content of workflow definition...',
      tags: ['workflows'],
      complexity: 'high',
      phases: [],
    });
    expect(details.name).toBe('feature-development');
  });

  it('workflow.start returns the first step with new_token', async () => {
    const usage = { name: 'workflow.start', arguments: { workflow_name: 'feature-development' } };
    started = (await rpc('start', 'tools/call', usage)).result.structuredContent;
    conforms(started, {
      success: true,
      execution_id: 'exec_001',
      step_name: 'design',
      agent_name: 'architect',
      agent_content: '# Architect Agent\n\nYou are a system architect...',
      workflow_state: 'running',
      new_token: 'eyJ...',
      message: "Workflow 'feature-development' started. Step 'design' ready.",
    });
    expect(started).toMatchObject({
      success: true,
      step_name: 'design',
      agent_name: 'architect',
      workflow_state: 'running',
      message: "Workflow 'feature-development' started. Step 'design' ready.",
    });
    expect(started.agent_content).toContain('# Architect');
    expect(started.new_token).toMatch(/^eyJ/);
    // A custom execution id (the seed's optional argument).
    const custom = await call('workflow.start', {
      workflow_name: 'feature-development',
      execution_id: 'exec_001',
    });
    expect(custom.execution_id).toBe('exec_001');
  });

  it('current_step: persona, continuation_token and instructions', async () => {
    const current = await read(`workflowlookup://workflow/current_step/${started.execution_id}`);
    conforms(current, {
      execution_id: 'exec_001',
      workflow_name: 'feature-development',
      workflow_state: 'running',
      current_step: 'design',
      step_status: 'pending',
      agent_name: 'architect',
      progress: '1/3',
      continuation_token: 'eyJ...',
      agent_content: '# Architect Agent\n\nYou are a system architect...',
      instructions: 'Read the agent_content above carefully...',
    });
    expect(current).toMatchObject({
      execution_id: started.execution_id,
      workflow_name: 'feature-development',
      workflow_state: 'running',
      current_step: 'design',
      agent_name: 'architect',
      progress: '1/3',
      continuation_token: started.new_token,
    });
    const running = await read(`workflowlookup://workflow/workflow_status/${started.execution_id}`);
    conforms(running, {
      execution_id: 'exec_001',
      workflow_name: 'feature-development',
      state: 'running',
      current_step: 'design',
      started_at: '2025-01-15T10:00:00.000Z',
      updated_at: '2025-01-15T10:30:00.000Z',
      completed_at: null,
      duration_ms: null,
      steps: { total: 3, completed: 1, failed: 0, running: 1, pending: 1 },
    });
    expect(running).toMatchObject({
      workflow_name: 'feature-development',
      state: 'running',
      current_step: 'design',
    });
  });

  it('workflow.next_step with the token: next step, completion, and the error return', async () => {
    const usage = {
      name: 'workflow.next_step',
      arguments: {
        token: started.new_token,
        output: {
          summary: 'Architecture design completed with component diagrams',
          artifacts: ['design_doc_001'],
          next_step_recommendation: 'Begin implementation of core components',
        },
      },
    };
    const implement = (await rpc('next', 'tools/call', usage)).result.structuredContent;
    conforms(implement, {
      success: true,
      execution_id: 'exec_001',
      step_name: 'implement',
      agent_content: '# Implementer Agent\n\nYou are a code implementer...',
      workflow_state: 'running',
      new_token: 'eyJ...',
      message: "Step 'implement' ready. Review agent_content and continue.",
    });
    expect(implement).toMatchObject({ success: true, step_name: 'implement', workflow_state: 'running' });
    expect(implement.message).toMatch(/^Step 'implement' ready\./);
    // The seed's continuation_token name is accepted for the token too.
    const review = await call('workflow.next_step', {
      continuation_token: implement.new_token,
      output: { summary: 'Implemented', artifacts: ['design_doc_001'] },
    });
    expect(review.step_name).toBe('review');
    const done = await call('workflow.next_step', {
      token: review.new_token,
      output: { summary: 'Reviewed' },
    });
    conforms(done, {
      success: true,
      execution_id: 'exec_001',
      workflow_state: 'completed',
      message: 'Workflow completed successfully',
    });
    expect(done).toMatchObject({
      success: true,
      workflow_state: 'completed',
      message: 'Workflow completed successfully',
    });
    expect(done.execution_id).toBe(started.execution_id);

    const status = await read(`workflowlookup://workflow/workflow_status/${started.execution_id}`);
    expect(status).toMatchObject({ state: 'completed', steps: { total: 3, completed: 3 } });

    const history = await read(`workflowlookup://workflow/step_history/${started.execution_id}`);
    conforms(history[0], {
      step_name: 'design',
      agent_name: 'architect',
      status: 'completed',
      started_at: '2025-01-15T10:00:00.000Z',
      completed_at: '2025-01-15T10:30:00.000Z',
      duration_ms: 1800000,
      output: { summary: 'Architecture design completed', artifacts: ['design_doc_001'] },
    });
    expect(history.map((h: Json) => [h.step_name, h.agent_name, h.status])).toEqual([
      ['design', 'architect', 'completed'],
      ['implement', 'implementer', 'completed'],
      ['review', 'reviewer', 'completed'],
    ]);

    const telemetry = await read(`workflowlookup://workflow/telemetry/${started.execution_id}`);
    const created = telemetry.find((e: Json) => e.event_type === 'workflow_created');
    conforms(created, {
      id: 1,
      event_type: 'workflow_created',
      execution_id: 'exec_001',
      step_name: null,
      agent_name: null,
      metadata: { workflow_name: 'feature-development' },
      created_at: '2025-01-15T10:00:00.000Z',
    });
    const generated = telemetry.find((e: Json) => e.event_type === 'token_generated');
    expect(generated).toMatchObject({ event_type: 'token_generated', step_name: 'design' });
  });

  it('workflow_artifacts of an execution and of one step', async () => {
    const answer = await call('workflow_start', { workflow_id: 'feature-development' });
    await call('workflow_next_step', {
      token: answer.new_token,
      output: {
        summary: 'Architecture design completed',
        artifacts: [
          {
            type: 'report',
            name: 'architecture_design.md',
            content: '# Design',
            content_type: 'text/markdown',
            metadata: { version: '1.0' },
          },
        ],
      },
    });
    const artifacts = await read(
      `workflowlookup://workflow/workflow_artifacts/${answer.execution_id}/design`,
    );
    conforms(artifacts[0], {
      id: 1,
      step_name: 'design',
      artifact_type: 'report',
      name: 'architecture_design.md',
      content_type: 'text/markdown',
      size_bytes: 4096,
      metadata: { version: '1.0' },
      created_at: '2025-01-15T10:30:00.000Z',
    });
  });

  it('the error return of next_step: a token that is not valid', async () => {
    const answer = await rpc('bad', 'tools/call', {
      name: 'workflow.next_step',
      arguments: { token: 'eyJleGVjdXRpb25faWQiOiJleGVjXzAwMSJ9', output: { summary: 'x' } },
    });
    expect(answer.result.isError).toBe(true);
    // Seed 004's error return: success false and the execution ("" when the token names none); the
    // error itself is the structured error every tool answers with (code, message, data).
    conforms(answer.result.structuredContent, { success: false, execution_id: '', error: {} });
    expect(answer.result.structuredContent).toMatchObject({ success: false, error: { code: -32007 } });
    expect(answer.result.structuredContent.error.message).toEqual(expect.any(String));
  });
});

describe('seed 001: shutdown', () => {
  it('answers shutdown with a null result', async () => {
    expect(await rpc(99, 'shutdown', {})).toEqual({ jsonrpc: '2.0', id: 99, result: null });
  });
});
