import { Graph, layout } from '@dagrejs/dagre';
import type { DiagramNode, WorkflowDiagram } from '../workflows/diagram.js';

/**
 * A workflow diagram as SVG markup, laid out with dagre on the server. The SVG has classes and geometry only
 * (no `style` attribute, no <style>), so it is inlined under a CSP without 'unsafe-inline' and styled by
 * dashboard.css; live pages mark steps by toggling `is-*` classes on `g[data-step]`.
 */

const FONT = 13; // px, as in dashboard.css (.wf-diagram)
const SMALL = 11;
const LINE = 17;

/** Text width without a DOM: sans-serif advance widths in em, close enough to size boxes. */
function textWidth(text: string, size: number): number {
  let em = 0;
  for (const ch of text) {
    if ("iljtfr.,:;|!' ".includes(ch)) em += 0.32;
    else if ('mwMW@'.includes(ch)) em += 0.9;
    else if (ch >= 'A' && ch <= 'Z') em += 0.72;
    else em += 0.6;
  }
  return Math.ceil(em * size);
}

// This module (with dagre) is loaded only when a page draws a diagram, so it keeps its own escaping.
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const round = (n: number) => Math.round(n * 10) / 10;
const attr = (text: string) => escapeHtml(text);

interface Box {
  node: DiagramNode;
  lines: { text: string; size: number }[];
  width: number;
  height: number;
}

export interface SvgOptions {
  /** Accessible name of the picture. */
  title: string;
  /** Initial live state per step id, as `is-<state>` classes (done, current, skipped, failed). */
  states?: ReadonlyMap<string, string>;
}

export function diagramSvg(diagram: WorkflowDiagram, options: SvgOptions): string {
  const g = new Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 36, edgesep: 12, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));

  const boxes = new Map<string, Box>();
  for (const node of diagram.nodes) {
    const lines = [
      { text: clip(node.step ?? node.title, 48), size: FONT },
      ...(node.step !== undefined ? [{ text: clip(node.title, 48), size: FONT }] : []),
      ...(node.detail !== undefined ? [{ text: clip(node.detail, 56), size: SMALL }] : []),
    ];
    const round = node.kind === 'end' || node.kind === 'start';
    const pad = node.kind === 'loop' || node.kind === 'inputs' || node.kind === 'join' ? 44 : 24;
    const width = round ? 56 : Math.max(...lines.map((l) => textWidth(l.text, l.size))) + pad;
    const height = round ? 36 : 14 + lines.length * LINE;
    boxes.set(node.id, { node, lines, width, height });
    g.setNode(node.id, { width, height });
  }
  for (const cluster of diagram.clusters) {
    g.setNode(cluster.id, { width: 0, height: 0, paddingTop: 24 });
    for (const child of cluster.children) g.setParent(child, cluster.id);
  }
  // dagre places the successors of a node right to left in the order their edges were set: a
  // fan-out's edges go in reverse, so the children read left to right as the delegation lists them.
  const order = diagram.edges.map((_, i) => i);
  for (let i = 0; i < order.length; ) {
    const from = diagram.edges[i]?.from;
    let end = i;
    while (diagram.edges[end]?.kind === 'fan' && diagram.edges[end]?.from === from) end++;
    if (end > i + 1) order.splice(i, end - i, ...order.slice(i, end).reverse());
    i = Math.max(end, i + 1);
  }
  for (const i of order) {
    const e = diagram.edges[i] as (typeof diagram.edges)[number];
    const label = e.label !== undefined ? clip(e.label, 60) : undefined;
    g.setEdge(
      e.from,
      e.to,
      {
        width: label ? textWidth(label, SMALL) + 8 : 0,
        height: label ? 16 : 0,
        labelpos: 'c',
        minlen: 1,
        weight: e.kind === 'skip' || e.kind === 'back' ? 0 : 2,
      },
      `e${i}`,
    );
  }
  // Layout-only edges pull whatever follows a loop below its body (drawn edges leave from the loop node,
  // which alone would put the body beside the main column).
  for (const cluster of diagram.clusters) {
    const last = cluster.children.at(-1);
    if (last === undefined) continue;
    for (const e of diagram.edges) {
      if (e.from === `s:${cluster.loop}` && !cluster.children.includes(e.to)) {
        g.setEdge(last, e.to, { width: 0, height: 0, weight: 4, minlen: 1 }, `layout:${e.to}`);
      }
    }
  }
  layout(g);

  const { width = 0, height = 0 } = g.graph() as { width?: number; height?: number };
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="wf-diagram" viewBox="0 0 ${round(width)} ${round(height)}" width="${round(width)}" height="${round(height)}" role="img" aria-label="${attr(options.title)}">`,
    '<defs><marker id="wf-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path class="wf-arrowhead" d="M0,0L10,5L0,10z"/></marker></defs>',
  ];
  for (const cluster of diagram.clusters) {
    const n = g.node(cluster.id) as { x: number; y: number; width: number; height: number };
    const x = n.x - n.width / 2;
    const y = n.y - n.height / 2;
    out.push(
      `<g class="wf-cluster" data-loop="${attr(cluster.loop)}"><rect x="${round(x)}" y="${round(y)}" width="${round(n.width)}" height="${round(n.height)}" rx="6"/><text x="${round(x + 8)}" y="${round(y + 15)}">${escapeHtml(cluster.title)}</text></g>`,
    );
  }
  // Edge labels go on top of every edge, drawn after all of them: drawn with its own edge, a label was
  // crossed by the edges drawn later (a loop's dashed back and skip edges ran through "next iteration").
  const labels: string[] = [];
  diagram.edges.forEach((e, i) => {
    const laid = g.edge({ v: e.from, w: e.to, name: `e${i}` }) as {
      points: { x: number; y: number }[];
      x?: number;
      y?: number;
      width?: number;
    };
    const pts = laid.points;
    const first = pts[0];
    const last = pts.at(-1);
    if (first === undefined || last === undefined) return;
    // Quadratic segments through dagre's control points smooth the polyline.
    let d = `M${round(first.x)},${round(first.y)}`;
    for (let p = 1; p < pts.length - 1; p++) {
      const here = pts[p] as { x: number; y: number };
      const next = pts[p + 1] as { x: number; y: number };
      d += ` Q${round(here.x)},${round(here.y)} ${round((here.x + next.x) / 2)},${round((here.y + next.y) / 2)}`;
    }
    d += ` L${round(last.x)},${round(last.y)}`;
    out.push(
      `<g class="wf-edge wf-edge-${e.kind}" data-from="${attr(e.from)}" data-to="${attr(e.to)}"><path d="${d}" marker-end="url(#wf-arrow)"/>`,
    );
    if (e.label !== undefined && laid.x !== undefined && laid.y !== undefined) {
      const w = laid.width ?? 0;
      labels.push(
        `<g class="wf-edge-label-box" data-from="${attr(e.from)}" data-to="${attr(e.to)}"><rect class="wf-edge-label-bg" x="${round(laid.x - w / 2)}" y="${round(laid.y - 8)}" width="${round(w)}" height="16" rx="3"/><text class="wf-edge-label" x="${round(laid.x)}" y="${round(laid.y + 4)}">${escapeHtml(clip(e.label, 60))}</text></g>`,
      );
    }
    out.push('</g>');
  });
  out.push(...labels);
  for (const box of boxes.values()) {
    const { node, lines } = box;
    const at = g.node(node.id) as { x: number; y: number };
    const hw = box.width / 2;
    const hh = box.height / 2;
    let shape: string;
    switch (node.kind) {
      case 'inputs':
        shape = `<polygon points="${round(-hw + 12)},${round(-hh)} ${round(hw)},${round(-hh)} ${round(hw - 12)},${round(hh)} ${round(-hw)},${round(hh)}"/>`;
        break;
      case 'loop':
        shape = `<polygon points="${round(-hw + 14)},${round(-hh)} ${round(hw - 14)},${round(-hh)} ${round(hw)},0 ${round(hw - 14)},${round(hh)} ${round(-hw + 14)},${round(hh)} ${round(-hw)},0"/>`;
        break;
      case 'join':
        // Narrower at the bottom: the children's work gathered into one.
        shape = `<polygon points="${round(-hw)},${round(-hh)} ${round(hw)},${round(-hh)} ${round(hw - 14)},${round(hh)} ${round(-hw + 14)},${round(hh)}"/>`;
        break;
      case 'child':
        shape = `<rect x="${round(-hw)}" y="${round(-hh)}" width="${round(box.width)}" height="${round(box.height)}" rx="${round(hh)}"/>`;
        break;
      case 'start':
        shape = `<circle r="${round(hh)}"/>`;
        break;
      case 'end':
        shape = `<circle r="${round(hh)}"/><circle class="wf-inner" r="${round(hh - 4)}"/>`;
        break;
      case 'command':
        shape = `<rect x="${round(-hw)}" y="${round(-hh)}" width="${round(box.width)}" height="${round(box.height)}" rx="3"/><path class="wf-inner" d="M${round(-hw + 6)},${round(-hh)}V${round(hh)}M${round(hw - 6)},${round(-hh)}V${round(hh)}"/>`;
        break;
      default:
        shape = `<rect x="${round(-hw)}" y="${round(-hh)}" width="${round(box.width)}" height="${round(box.height)}" rx="6"/>`;
    }
    const top = -hh + 19;
    const texts =
      node.kind === 'end' || node.kind === 'start'
        ? `<text y="4">${escapeHtml(node.title)}</text>`
        : lines
            .map((l, i) => {
              const cls =
                l.size === SMALL ? ' class="wf-detail"' : i === 0 && node.step ? ' class="wf-id"' : '';
              return `<text y="${round(top + i * LINE)}"${cls}>${escapeHtml(l.text)}</text>`;
            })
            .join('');
    const state = node.step !== undefined ? options.states?.get(node.step) : undefined;
    const classes = `wf-node wf-${node.kind}${state ? ` is-${attr(state)}` : ''}`;
    const data = node.step !== undefined ? ` data-step="${attr(node.step)}"` : '';
    const tip = [node.step, node.title, node.detail].filter((t) => t !== undefined).join(' — ');
    out.push(
      `<g class="${classes}"${data} transform="translate(${round(at.x)},${round(at.y)})">${shape}${texts}<title>${escapeHtml(tip)}</title></g>`,
    );
  }
  out.push('</svg>');
  return out.join('\n');
}
