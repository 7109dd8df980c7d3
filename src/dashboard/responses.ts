// What every dashboard answer shares: the security headers, refusals as values (HttpError), reading a
// form, refusing cross-site requests, and sending a page or a redirect. The dashboard and its sign-in use it.
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The policy of every page: scripts, styles and images from the dashboard itself only, no inline
 * script or style (user data can never become code), forms post only back to it, and no framing.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // Same-origin keeps links to other sites (in artifacts) from learning dashboard URLs; it also lets
  // browsers send a real Origin on the dashboard's own form posts.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const MAX_FORM_BYTES = 8 * 1024;

/** A request the dashboard refuses: the status and a message shown on the error page. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded')
    throw new HttpError(415, 'Send the form as a browser does.');
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_FORM_BYTES) throw new HttpError(413, 'That form is too large.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new HttpError(413, 'That form is too large.');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Same-origin requests only: browsers say where a request comes from (Sec-Fetch-Site, Origin). */
export function refuseCrossSite(req: IncomingMessage): void {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin')
    throw new HttpError(403, 'Cross-site requests are refused.');
  const origin = req.headers.origin;
  // 'null' is what browsers send when a referrer policy hides the origin; Sec-Fetch-Site still tells.
  if (origin !== undefined && !(origin === 'null' && site === 'same-origin')) {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host === undefined || host !== req.headers.host)
      throw new HttpError(403, 'Cross-site requests are refused.');
  }
}

/** Sends a page with the dashboard's security headers, never cached. */
export function sendHtml(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string | string[]> = {},
): void {
  const bytes = Buffer.from(body, 'utf8');
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(bytes.length),
    'cache-control': 'no-store',
    ...SECURITY_HEADERS,
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : bytes);
}

/** A 303 to `location` (after a form, or to the page a request should have asked for). */
export function redirect(res: ServerResponse, location: string, setCookie?: string): void {
  res
    .writeHead(303, {
      location,
      'cache-control': 'no-store',
      ...SECURITY_HEADERS,
      ...(setCookie !== undefined ? { 'set-cookie': setCookie } : {}),
    })
    .end();
}
