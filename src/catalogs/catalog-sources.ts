/**
 * Reading an OpenAPI document from where the user points: a local file, or an http(s) URL when the
 * operator allows URL sources. Both are capped at MAX_SOURCE_BYTES while reading (a URL answer is
 * streamed and cut off, never buffered whole), and URL hosts pass the same HostPolicy as API calls.
 */
import { open } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { DomainFailure, fail } from '../engine/errors.js';
import { BodyTooLarge, send } from './guarded-http.js';
import { type HostPolicy, HostRefused } from './host-policy.js';
import { MAX_DOCUMENT_BYTES } from './openapi-load.js';

export const MAX_SOURCE_BYTES = MAX_DOCUMENT_BYTES;
const URL_TIMEOUT_MS = 10_000;
const MAX_SOURCE_REDIRECTS = 5;

export type SourceType = 'path' | 'url';

export interface SourceOptions {
  allowUrls: boolean;
  policy: HostPolicy;
  /** Relative paths are resolved against it. */
  cwd: string;
  timeoutMs?: number;
}

const invalid = (details: string): never =>
  fail({ code: 'invalid_params', message: 'Invalid params', details });

export function sourceTypeOf(source: string, type: SourceType | undefined): SourceType {
  return type ?? (/^https?:\/\//i.test(source) ? 'url' : 'path');
}

/** The text of a source; an invalid_params failure says why it cannot be read. */
export async function readSource(
  source: string,
  type: SourceType | undefined,
  options: SourceOptions,
): Promise<string> {
  if (sourceTypeOf(source, type) === 'url') return readUrl(source, options);
  return readPath(isAbsolute(source) ? source : resolve(options.cwd, source));
}

async function readPath(path: string): Promise<string> {
  const file = await open(path, 'r').catch(() => invalid(`no readable file at ${path}`));
  try {
    const info = await file.stat();
    if (!info.isFile()) invalid(`${path} is not a file`);
    if (info.size > MAX_SOURCE_BYTES) invalid(`${path} is larger than ${MAX_SOURCE_BYTES} bytes`);
    // Counted while reading too: a file that grows after stat is still cut off at the limit.
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const { bytesRead } = await file.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      size += bytesRead;
      if (size > MAX_SOURCE_BYTES) invalid(`${path} is larger than ${MAX_SOURCE_BYTES} bytes`);
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await file.close();
  }
}

async function readUrl(source: string, options: SourceOptions): Promise<string> {
  if (!options.allowUrls) {
    invalid('URL sources are disabled; set WORKFLOWLOOKUP_ALLOW_URL_SOURCES=true or use a local path');
  }
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return invalid(`${source} is not a URL`);
  }
  const signal = AbortSignal.timeout(options.timeoutMs ?? URL_TIMEOUT_MS);
  try {
    for (let hop = 0; ; hop++) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') invalid(`${url.href} is not an http(s) URL`);
      const res = await send(url, {
        method: 'GET',
        headers: { accept: 'application/json, application/yaml, text/yaml, */*' },
        signal,
        policy: options.policy,
      });
      const location = res.status >= 300 && res.status < 400 ? res.header('location') : undefined;
      if (location !== undefined) {
        res.discard();
        if (hop >= MAX_SOURCE_REDIRECTS) invalid(`${source}: too many redirects`);
        url = new URL(location, url);
        continue;
      }
      if (res.status < 200 || res.status >= 300) {
        res.discard();
        invalid(`${source} answered ${res.status}`);
      }
      return (await res.read(MAX_SOURCE_BYTES)).toString('utf8');
    }
  } catch (error) {
    if (error instanceof DomainFailure) throw error;
    if (error instanceof BodyTooLarge) invalid(`${source} is larger than ${MAX_SOURCE_BYTES} bytes`);
    if (error instanceof HostRefused) invalid(`cannot fetch ${source}: ${error.message}`);
    if (signal.aborted)
      invalid(`cannot fetch ${source}: no complete answer within ${options.timeoutMs ?? URL_TIMEOUT_MS} ms`);
    return invalid(`cannot fetch ${source}: ${(error as Error).message}`);
  }
}
