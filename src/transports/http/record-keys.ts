// The public keys execution records are signed with, at a well-known URL anyone may read (they are
// public: a CI job fetches them to run `workflowlookup verify --keys <url>`). No authentication, no
// session; the same Host/Origin guards as every path of the server.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RecordKeyring } from '../../record/keys.js';
import type { Mount } from './mounts.js';

export const RECORD_KEYS_PATH = '/.well-known/workflowlookup-record-keys.json';

export function recordKeysMount(keyring: RecordKeyring): Mount {
  return {
    handle(req: IncomingMessage, res: ServerResponse) {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path !== RECORD_KEYS_PATH) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' });
        res.end('{"error":"method not allowed: GET the keys"}');
        return;
      }
      let body: string;
      try {
        body = `${JSON.stringify(keyring.jwks(), null, 2)}\n`;
      } catch (error) {
        // A damaged key file is the operator's to fix; the reader learns only that keys are unavailable.
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'record keys unavailable', detail: (error as Error).message }));
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/jwk-set+json',
        'cache-control': 'public, max-age=300',
        'content-length': Buffer.byteLength(body),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    },
  };
}
