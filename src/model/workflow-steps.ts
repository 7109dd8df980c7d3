/** A step of any kind (prompt, loop, command), and the guards that tell them apart. */
import * as z from 'zod';
import { type CommandStep, commandStepSchemas } from './command-step.js';
import { type LoopStep, loopStepSchemas } from './loop-step.js';
import { type PromptStep, promptStepSchemas } from './prompt-step.js';

function buildStepSchemas() {
  const { PromptStepSchema } = promptStepSchemas();
  const { LoopStepSchema } = loopStepSchemas();
  const { CommandStepSchema } = commandStepSchemas();
  const StepSchema = z.union([PromptStepSchema, LoopStepSchema, CommandStepSchema]);
  return { StepSchema };
}

type Schemas = ReturnType<typeof buildStepSchemas>;
let built: Schemas | undefined;

/** The step schema (built once, on the first call). */
export function stepSchemas(): Schemas {
  built ??= buildStepSchemas();
  return built;
}

export type Step = z.infer<Schemas['StepSchema']>;

/** A step that does something (as opposed to a loop that repeats others). */
export type ActionStep = PromptStep | CommandStep;

export function isCommandStep(step: Step): step is CommandStep {
  return 'run' in step;
}

export function isPromptStep(step: Step): step is PromptStep {
  return !isLoopStep(step) && !isCommandStep(step);
}

export function isLoopStep(step: Step): step is LoopStep {
  return 'type' in step && step.type === 'loop';
}
