import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Config } from '../config.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import { guidanceTools } from '../faces/guidance/guidance-tools.js';
import { WorkflowRegistry } from '../workflows/registry.js';
import { createMcpServer, createToolRunner } from './mcp-server.js';
import { StdioWire } from './stdio-wire.js';

const log = (line: string) => process.stderr.write(`[workflowlookup] ${line}\n`);

/** Runs the MCP server on stdin/stdout until `shutdown`, end of input, or SIGTERM/SIGINT. */
export function runStdioServer(config: Config, options: { maxMessageBytes?: number } = {}): void {
  const registry = new WorkflowRegistry(config.sources);
  const engine = new ValidationEngine();
  const runner = createToolRunner(guidanceTools({ registry, engine }), log);

  let exiting = false;
  const exit = (code: number) => {
    if (exiting) return;
    exiting = true;
    registry.close();
    // Let stdout drain so the last response (e.g. to shutdown) is not lost.
    process.stdout.write('', () => process.exit(code));
  };

  const wire = new StdioWire({
    stdin: process.stdin,
    stdout: process.stdout,
    directMethods: new Set(runner.tools.map((t) => t.name)),
    direct: (method, params) => runner.run(method, params),
    onExit: () => exit(0),
    log,
    ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
  });

  serveStdio(() => createMcpServer(runner, config.version), {
    transport: wire,
    onerror: (error) => log(`protocol: ${error.message}`),
  });

  process.on('SIGTERM', () => exit(0));
  process.on('SIGINT', () => exit(0));
  process.stdout.on('error', () => exit(0));

  // Load definitions after the transport is up, so `initialize` is answered without waiting for them.
  setImmediate(() => {
    registry.ready().then(
      () => registry.watch(),
      (error: unknown) => log(`loading workflows failed: ${String(error)}`),
    );
    engine.load().catch((error: unknown) => log(`loading the validation engine failed: ${String(error)}`));
  });
}
