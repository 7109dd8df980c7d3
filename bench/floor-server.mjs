// The floor: a bare Node process that answers each JSON line it reads, nothing else. Every start-up
// number of `npm run bench` is also reported as a ratio to this process's spawn → first answer,
// measured in the same run on the same machine.
let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
    const msg = JSON.parse(buffer.slice(0, nl));
    buffer = buffer.slice(nl + 1);
    if (msg.method === 'shutdown') {
      process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: null })}\n`, () =>
        process.exit(0),
      );
      return;
    }
    if (msg.id !== undefined)
      process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: {} })}\n`);
  }
});
