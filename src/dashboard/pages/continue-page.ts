// The one-hop page for a link followed from another site.
import { html } from '../html.js';
import { layout, type PageContext } from './page-kit.js';

/**
 * A link followed from another site carries no SameSite=Strict cookie: this page moves on to the same
 * address from the dashboard itself (a meta refresh, no script), and that request carries it.
 */
export function continuePage(ctx: PageContext, to: string): string {
  return layout(ctx, {
    title: 'Continue',
    nav: 'none',
    body: html`<p><a href="${to}">Continue to the dashboard</a></p>`,
    anonymous: true,
    refresh: to,
  });
}
