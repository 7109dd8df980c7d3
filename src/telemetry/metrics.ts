/**
 * Where the code counts what operators watch. The calls cost a test of one variable until a metrics
 * registry is installed (prometheus.ts, loaded by `serve --http` only), so stdio and one-shot commands
 * never load prom-client.
 */

/**
 * How much of a client's name the server repeats: error details quote the first 200 characters of an
 * unknown method or tool (protocol/rules.ts), and a metric label keeps no more (prometheus.ts). A name
 * is the client's text and may be megabytes long.
 */
export const ECHOED_NAME_CHARS = 200;

/** A client's name as the server repeats it: the first ECHOED_NAME_CHARS characters, and `…` if cut. */
export function echoedName(name: string): string {
  return name.length > ECHOED_NAME_CHARS ? `${name.slice(0, ECHOED_NAME_CHARS)}…` : name;
}

/**
 * The one label value of every method, tool, prompt or resource name the server does not serve: a
 * client may make up as many as it likes, and each would otherwise be a series of its own.
 */
export const UNKNOWN_NAME = 'unknown';

/** What the instruments record; prometheus.ts implements it. */
export interface MetricsSink {
  /**
   * One MCP request answered: its method, the tool for tools/call and direct calls, and whether it
   * failed. A method or tool the server does not serve arrives as UNKNOWN_NAME.
   */
  request(method: string, tool: string | undefined, failed: boolean, seconds: number): void;
  /** One tool call ended: ok, or the error code it answered with. */
  toolCall(tool: string, errorCode: string | undefined, seconds: number): void;
  /** A step submission (workflow_next_step) ended: `advanced`, `completed`, `rejected`, `error`… */
  step(outcome: string, seconds: number): void;
  /** A store transaction ran again after a conflict (PostgreSQL: serialization failure, deadlock, duplicate). */
  transactionRetry(store: 'sqlite' | 'postgres'): void;
  /** A command step's HTTP call ended: its status class (2xx…) or `error`. */
  commandCall(status: string, seconds: number): void;
}

const seconds = (startedNs: bigint) => Number(process.hrtime.bigint() - startedNs) / 1e9;

/**
 * The instruments the code records through; each is a no-op until a sink (the Prometheus registry of
 * `serve --http`) is attached. One per app, built by the composition root and handed to the parts that
 * record, as the logger is: two apps in one process (the tests) never count into each other's registry.
 */
export class Metrics {
  private sink: MetricsSink | undefined;

  /** Records into `sink` from now on; the returned function detaches it. */
  attach(sink: MetricsSink): () => void {
    this.sink = sink;
    return () => {
      if (this.sink === sink) this.sink = undefined;
    };
  }

  /** A start time for the instruments below, or 0n when nothing records (saves the clock read). */
  start(): bigint {
    return this.sink === undefined ? 0n : process.hrtime.bigint();
  }

  request(method: string, tool: string | undefined, failed: boolean, started: bigint): void {
    this.sink?.request(method, tool, failed, seconds(started));
  }

  toolCall(tool: string, errorCode: string | undefined, started: bigint): void {
    this.sink?.toolCall(tool, errorCode, seconds(started));
  }

  step(outcome: string, started: bigint): void {
    this.sink?.step(outcome, seconds(started));
  }

  transactionRetry(store: 'sqlite' | 'postgres'): void {
    this.sink?.transactionRetry(store);
  }

  commandCall(status: string, started: bigint): void {
    this.sink?.commandCall(status, seconds(started));
  }
}

/** Instruments that record nothing, ever: for parts built outside an app (unit tests, scratch stores). */
export const NO_METRICS: Metrics = new (class extends Metrics {
  override attach(): () => void {
    throw new Error("NO_METRICS records nothing; attach a sink to the app's Metrics");
  }
})();
