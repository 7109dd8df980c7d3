// Signing out: a signed-in viewer confirms it (GET /logout shows this page; the form posts).
import { html } from '../html.js';
import { href, layout, type PageContext } from './page-kit.js';

/** The page that asks a signed-in viewer to confirm signing out (GET /logout). */
export function signOutPage(ctx: PageContext): string {
  const body = html`<section class="sign-in"><h1>Sign out</h1><p>End your dashboard session (${ctx.viewer.principal}) in this browser?</p>
<form method="post" action="${href(ctx, '/logout')}"><button type="submit">Sign out</button></form></section>`;
  return layout(ctx, { title: 'Sign out', nav: 'none', body, anonymous: true });
}
