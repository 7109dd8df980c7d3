// Signing in (the dashboard under `serve --http` with authentication).
import { html } from '../html.js';
import { href, layout, type PageContext } from './page-kit.js';

export const SESSION_HOURS = 12;

export function loginPage(
  ctx: PageContext,
  view: { next: string; message?: string | undefined; signedOut?: boolean },
): string {
  const body = html`<section class="sign-in">
<h1>Sign in</h1>
${view.signedOut ? html`<p class="notice" role="status">You are signed out.</p>` : ''}
${view.message !== undefined ? html`<p class="notice notice-conflict" role="alert">${view.message}</p>` : ''}
<form class="sign-in-form" method="post" action="${href(ctx, '/login')}">
<input type="hidden" name="next" value="${view.next}">
<label>Token <input type="password" name="token" autocomplete="off" spellcheck="false" required autofocus maxlength="7000"></label>
<button type="submit">Sign in</button>
</form>
<p class="muted">Paste a static token (<code>workflowlookup token add NAME</code>) or a JWT from your identity provider. It is checked exactly as the MCP endpoint checks it and is not kept: a signed cookie remembers who you are and your scopes for ${SESSION_HOURS} hours (less if the JWT expires sooner). You see your own executions and runs only. Pages need the <code>read</code> scope; pausing, resuming, abandoning and cancelling need <code>run</code>; approving and rejecting need <code>approve</code> (for the approvals your principal decides).</p>
</section>`;
  return layout(ctx, { title: 'Sign in', nav: 'none', body, anonymous: true });
}
