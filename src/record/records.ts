// Signed records of executions, as the server hands them out (the agent's resource, the dashboard's
// download, `workflowlookup record`): the service's record data, signed with the keyring's key.

import { createPublicKey, type KeyObject } from 'node:crypto';
import type { SerializedBundle } from '@sigstore/bundle';
import type { Caller } from '../executions/execution-model.js';
import type { ExecutionService } from '../executions/execution-service.js';
import { signRecord } from './envelope.js';
import type { Jwks, RecordKeyring } from './keys.js';
import { checkChain } from './verify.js';

export class Records {
  constructor(
    private readonly executions: () => Promise<ExecutionService>,
    readonly keyring: RecordKeyring,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The execution's record, signed now. `caller` null: the operator's (any principal's execution). */
  async signed(executionId: string, caller: Caller | null): Promise<SerializedBundle> {
    const data = await (await this.executions()).record(executionId, caller);
    return signRecord(data, this.keyring, this.now());
  }

  /** The public keys the server publishes, by key id: what its own records verify against. */
  trusted(): Map<string, KeyObject> {
    return keysOf(this.keyring.jwks());
  }

  /** The keys this host publishes, or undefined when it has none yet (none is generated for this). */
  existing(): Map<string, KeyObject> | undefined {
    const jwks = this.keyring.existingJwks();
    return jwks === undefined ? undefined : keysOf(jwks);
  }

  /**
   * What the dashboard says of an execution's record: whether its stored chain holds (checked as
   * `verify` checks a record's), and the key a download is signed with. Nothing is signed for this.
   */
  async status(executionId: string, caller: Caller): Promise<{ ok: boolean; text: string }> {
    const events = await (await this.executions()).recordEvents(executionId, caller);
    if (events.length === 0)
      return {
        ok: true,
        text: 'no events chained yet: the first download makes its chain from the telemetry',
      };
    const chain = checkChain(executionId, events);
    if (!chain.ok) return { ok: false, text: chain.failure };
    const { keyid } = this.keyring.signing();
    return {
      ok: true,
      text: `${events.length} events chained${chain.migrated > 0 ? ` (${chain.migrated} made from older telemetry)` : ''}, signed by key ${keyid.slice(0, 16)}…`,
    };
  }
}

function keysOf(jwks: Jwks): Map<string, KeyObject> {
  return new Map(jwks.keys.map((k) => [k.kid, createPublicKey({ key: { ...k }, format: 'jwk' })]));
}
