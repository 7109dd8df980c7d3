// Signed records of executions, as the server hands them out (the agent's resource, the dashboard's
// download, `workflowlookup record`): the service's record data, signed with the keyring's key.

import { createPublicKey, type KeyObject } from 'node:crypto';
import type { SerializedBundle } from '@sigstore/bundle';
import type { Caller } from '../executions/execution-model.js';
import type { ExecutionService } from '../executions/execution-service.js';
import { signRecord } from './envelope.js';
import type { Jwks, RecordKeyring } from './keys.js';
import { type Verified, verifyRecord } from './verify.js';

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

  /** Whether a record verifies against the published keys (the dashboard shows it beside the download). */
  check(bundle: SerializedBundle): { ok: true; verified: Verified } | { ok: false; failure: string } {
    return verifyRecord(JSON.stringify(bundle), { keys: this.trusted() });
  }
}

function keysOf(jwks: Jwks): Map<string, KeyObject> {
  return new Map(jwks.keys.map((k) => [k.kid, createPublicKey({ key: { ...k }, format: 'jwk' })]));
}
