// The dashboard's form tokens (CSRF) and the one check every action form goes through.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { RUN_SCOPE_NEEDED } from './pages/page-kit.js';
import { HttpError, readForm, refuseCrossSite } from './responses.js';
import { may, type Viewer } from './viewer.js';

const DAY_MS = 86_400_000;

/**
 * Form tokens: bound to the principal and to the day they were issued (valid for that day and the
 * next). Derived from the configured token secret, so replicas sharing it accept each other's forms;
 * without one, a key of this process.
 */
export class FormTokens {
  private readonly key: Buffer;

  constructor(
    tokenSecret: string | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.key = tokenSecret
      ? createHmac('sha256', tokenSecret).update('workflowlookup dashboard forms').digest()
      : randomBytes(32);
  }

  private day(offset = 0): string {
    return String(Math.floor(this.now() / DAY_MS) - offset);
  }

  /** The token a form shown to `principal` carries. */
  issue(principal: string, issued = this.day()): string {
    return `${issued}.${createHmac('sha256', this.key).update(`${principal}\n${issued}`).digest('base64url')}`;
  }

  valid(principal: string, token: string): boolean {
    const issued = token.split('.')[0] ?? '';
    if (issued !== this.day() && issued !== this.day(1)) return false;
    const given = Buffer.from(token);
    const expected = Buffer.from(this.issue(principal, issued));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /**
   * A POST from one of the dashboard's own forms, by a viewer who may act: its fields. Refused when it
   * comes from another site, the viewer lacks the run scope, or the form's token is not theirs (or old).
   */
  async actionForm(viewer: Viewer, req: IncomingMessage): Promise<URLSearchParams> {
    refuseCrossSite(req);
    if (!may(viewer, 'run')) throw new HttpError(403, RUN_SCOPE_NEEDED);
    const form = await readForm(req);
    if (!this.valid(viewer.principal, form.get('csrf') ?? '')) {
      throw new HttpError(403, 'This form has expired; reload the page and try again.');
    }
    return form;
  }
}
