// The HTTP floor: a bare node:http server that parses each POSTed JSON-RPC request and answers it with
// a small JSON result, nothing else (no MCP, no storage). What an HTTP round trip itself costs on this
// machine; bench/scenarios/http-cost.mjs measures it in the same run as the MCP transports.
import { createServer } from 'node:http';

const answer = { next: [{ tool: 'workflow_next_step', arguments: { token: 'echo' } }] };
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { structuredContent: answer } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stderr.write(`echo at http://127.0.0.1:${server.address().port}/mcp\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
