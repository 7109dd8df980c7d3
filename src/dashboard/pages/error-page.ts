// The page of a refused or failed request.
import { html } from '../html.js';
import { href, layout, type PageContext } from './page-kit.js';

export function errorPage(ctx: PageContext, status: number, message: string): string {
  const back =
    status === 401
      ? html`<a href="${href(ctx, '/login')}">Sign in</a>`
      : html`<a href="${href(ctx, '/')}">Back to the executions</a>`;
  return layout(ctx, {
    title: String(status),
    nav: 'none',
    body: html`<h1>${status}</h1><p>${message}</p><p>${back}</p>`,
    anonymous: ctx.viewer.principal === '',
  });
}
