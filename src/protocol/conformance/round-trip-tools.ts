// The 2026-07-28 fixture tools: capabilities declared per request and multi round-trip requests
// (SEP-2575, SEP-2322), and the tools that announce a changed tool or prompt list.
import { randomBytes } from 'node:crypto';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequest,
  inputRequired,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { answerText, askName, elicitation, mrtr, openState } from './asking.js';
import { type FixtureHooks, type FixtureTool, NO_ARGS, text } from './kit.js';

/** Capabilities and multi round-trip fixtures; preflight (fixtures.ts) refuses some before they run. */
export function registerRoundTripTools(tool: FixtureTool): void {
  // --- 2026-07-28: capabilities and multi round-trip requests (SEP-2575, SEP-2322) ---
  // Refused before it runs when the request did not declare sampling (see preflight).
  tool(
    'test_missing_capability',
    'Needs the sampling capability declared on the request',
    NO_ARGS,
    async () => text('Success'),
  );
  const responses = (ctx: ServerContext) => ctx.mcpReq.inputResponses ?? {};
  tool('test_input_required_result_elicitation', 'MRTR: asks for a name', NO_ARGS, async (_a, ctx) => {
    const answer = responses(ctx).user_name;
    if (answer === undefined) return mrtr({ user_name: askName('What is your name?') });
    return text(`Hello, ${answerText(answer, 'name') ?? 'stranger'}!`);
  });
  tool('test_input_required_result_sampling', 'MRTR: asks the client to sample', NO_ARGS, async (_a, ctx) => {
    const answer = responses(ctx).sample_request;
    if (answer === undefined) {
      return mrtr({
        sample_request: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
          maxTokens: 100,
        }),
      });
    }
    return text(`Sampling result: ${answerText(answer, 'text') ?? 'no response'}`);
  });
  tool(
    'test_input_required_result_list_roots',
    'MRTR: asks for the client roots',
    NO_ARGS,
    async (_a, ctx) => {
      const answer = responses(ctx).roots_request as { roots?: unknown } | undefined;
      if (answer === undefined) return mrtr({ roots_request: inputRequired.listRoots() });
      return text(`Found ${Array.isArray(answer.roots) ? answer.roots.length : 0} root(s)`);
    },
  );
  const confirmRequest = () =>
    inputRequired.elicit(elicitation('Please confirm', { ok: { type: 'boolean' } }, ['ok']) as never);
  tool(
    'test_input_required_result_request_state',
    'MRTR: round-trips requestState',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      const ok = (responses(ctx).confirm as { content?: { ok?: unknown } } | undefined)?.content?.ok;
      if (state?.kind === 'request-state' && ok === true) return text('state-ok: requestState validated');
      return mrtr(
        { confirm: confirmRequest() },
        { kind: 'request-state', nonce: randomBytes(8).toString('hex') },
      );
    },
  );
  tool(
    'test_input_required_result_multiple_inputs',
    'MRTR: asks three requests at once',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      const r = responses(ctx);
      if (state?.kind === 'multiple-inputs' && r.user_name && r.greeting && r.client_roots) {
        const roots = (r.client_roots as { roots?: unknown }).roots;
        return text(
          `Name: ${answerText(r.user_name, 'name')}; Greeting: ${answerText(r.greeting, 'text') ?? 'Hello there!'}; Roots: ${Array.isArray(roots) ? roots.length : 0}`,
        );
      }
      return mrtr(
        {
          user_name: askName('What is your name?'),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        { kind: 'multiple-inputs', nonce: randomBytes(8).toString('hex') },
      );
    },
  );
  tool(
    'test_input_required_result_multi_round',
    'MRTR: two rounds, state carried between them',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      const r = responses(ctx);
      if (state?.round === 1 && r.step1 !== undefined) {
        return mrtr(
          {
            step2: inputRequired.elicit(
              elicitation('Step 2: What is your favorite color?', { color: { type: 'string' } }, [
                'color',
              ]) as never,
            ),
          },
          { round: 2, name: answerText(r.step1, 'name') ?? 'friend' },
        );
      }
      if (state?.round === 2 && r.step2 !== undefined) {
        return text(
          `Multi-round complete for ${String(state.name)} who likes ${answerText(r.step2, 'color')}`,
        );
      }
      return mrtr({ step1: askName('Step 1: What is your name?') }, { round: 1 });
    },
  );
  // A requestState it did not sign is refused before it runs (see preflight).
  tool(
    'test_input_required_result_tampered_state',
    'MRTR: refuses a requestState it did not sign',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      if (state?.kind === 'tamper-test' && responses(ctx).confirm !== undefined) {
        return text('integrity-ok: state verified');
      }
      return mrtr(
        { confirm: confirmRequest() },
        { kind: 'tamper-test', nonce: randomBytes(8).toString('hex') },
      );
    },
  );
  tool(
    'test_input_required_result_capabilities',
    'MRTR: asks only what the request declared',
    NO_ARGS,
    async (_a, ctx) => {
      const declared = (ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as never] ?? {}) as {
        elicitation?: unknown;
        sampling?: unknown;
      };
      const given = Object.keys(responses(ctx));
      if (given.length > 0) return text(`capabilities-ok: received ${given.join(',')}`);
      const requests: Record<string, InputRequest> = {};
      if (declared.elicitation !== undefined) {
        requests.elicit_input = inputRequired.elicit(
          elicitation('Elicitation input', { value: { type: 'string' } }, ['value']) as never,
        );
      }
      if (declared.sampling !== undefined) {
        requests.sample_input = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Sample request' } }],
          maxTokens: 50,
        });
      }
      if (Object.keys(requests).length === 0) return text('No supported capabilities declared');
      return mrtr(requests, { kind: 'capabilities-test' });
    },
  );
}

/** Tools that tell every client the tool or prompt list changed (through the app's hooks). */
export function registerListChangeTools(tool: FixtureTool, hooks: FixtureHooks): void {
  tool('test_trigger_tool_change', 'Announces that the tool list changed', NO_ARGS, async () => {
    hooks.listChanged('tools');
    return text('Mutation triggered');
  });
  tool('test_trigger_prompt_change', 'Announces that the prompt list changed', NO_ARGS, async () => {
    hooks.listChanged('prompts');
    return text('Mutation triggered');
  });
}
