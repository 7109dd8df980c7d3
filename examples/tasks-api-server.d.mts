import type { IncomingHttpHeaders } from 'node:http';

export declare const TOKEN: string;

export declare class TasksApi {
  requests: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[];
  port: number;
  get baseUrl(): string;
  start(port?: number): Promise<void>;
  stop(): Promise<void>;
}
