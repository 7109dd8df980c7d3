import type * as z from 'zod';
import { type DomainError, DomainFailure } from '../engine/errors.js';

/** Seed 001/002 JSON-RPC error codes. */
export const RpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  ServerError: -32000,
  WorkflowNotFound: -32001,
  InvalidWorkflow: -32002,
  StepNotFound: -32003,
  ValidationError: -32004,
  StateError: -32005,
  StorageError: -32006,
  SecurityError: -32007,
} as const;

export interface RpcError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** The one place domain errors become JSON-RPC errors. */
export function domainToRpc(error: DomainError): RpcError {
  switch (error.code) {
    case 'workflow_not_found':
      return {
        code: RpcCode.WorkflowNotFound,
        message: 'Workflow not found',
        data: { workflowId: error.workflowId },
      };
    case 'workflow_invalid':
      return {
        code: RpcCode.InvalidWorkflow,
        message: 'Invalid workflow',
        data: {
          ...(error.workflowId !== undefined ? { workflowId: error.workflowId } : {}),
          ...(error.file !== undefined ? { file: error.file } : {}),
          violations: error.violations,
        },
      };
    case 'step_not_found':
      return {
        code: RpcCode.StepNotFound,
        message: 'Step not found',
        data: { stepId: error.stepId, workflowId: error.workflowId },
      };
    case 'criteria_invalid':
      return {
        code: RpcCode.ValidationError,
        message: 'Validation error',
        data: { workflowId: error.workflowId, stepId: error.stepId, details: error.details },
      };
    case 'invalid_params':
      return { code: RpcCode.InvalidParams, message: 'Invalid params', data: { details: error.details } };
    case 'storage_error':
      return { code: RpcCode.StorageError, message: 'Storage error', data: { details: error.details } };
    case 'execution_not_found':
      return {
        code: RpcCode.StateError,
        message: 'Execution not found',
        data: { executionId: error.executionId, details: error.message },
      };
    case 'state_conflict':
      return {
        code: RpcCode.StateError,
        message: 'State error',
        data: {
          executionId: error.executionId,
          details: error.details,
          ...(error.state !== undefined ? { state: error.state } : {}),
          ...(error.allowed !== undefined ? { allowed: error.allowed } : {}),
        },
      };
    case 'token_invalid':
      return { code: RpcCode.SecurityError, message: 'Security error', data: { details: error.details } };
    case 'token_expired':
      return {
        code: RpcCode.SecurityError,
        message: 'Token expired',
        data: {
          reason: 'expired',
          executionId: error.executionId,
          expiredAt: error.expiredAt,
          details: error.message,
          freshToken: error.freshToken,
        },
      };
  }
}

/** Any thrown value as a JSON-RPC error; unexpected ones become -32603 without leaking internals. */
export function toRpcError(error: unknown): RpcError {
  if (error instanceof DomainFailure) return domainToRpc(error.error);
  return { code: RpcCode.InternalError, message: 'Internal error' };
}

/** Zod issues as one readable line, e.g. "workflowId: is required; completedSteps[1]: ...". */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((issue) => {
      const path = issue.path.reduce<string>(
        (acc, key) =>
          typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key),
        '',
      );
      const message =
        issue.code === 'invalid_type' && /received undefined/.test(issue.message)
          ? 'is required'
          : issue.message;
      return path ? `${path} ${message}` : message;
    })
    .join('; ');
}

/** A tools/call failure: an isError result carrying the same code and data as a direct call. */
export function toToolErrorResult(error: RpcError): {
  isError: true;
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
} {
  const payload = { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) };
  return {
    isError: true,
    content: [
      { type: 'text', text: `${error.message} (${error.code}): ${JSON.stringify(error.data ?? {})}` },
    ],
    structuredContent: { error: payload },
  };
}
