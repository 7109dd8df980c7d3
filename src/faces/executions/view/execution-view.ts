/// <reference lib="dom" />
/**
 * The MCP App view of an execution (ui://workflowlookup/execution-progress.html): steps done and to
 * go, the current step and the last validation, kept up to date while the execution runs.
 *
 * The MCP Apps handshake is written here by hand (JSON-RPC over postMessage, spec 2026-01-26) instead
 * of bundling ext-apps' App class: the class brings zod and the MCP client along (650 KB minified),
 * and the view needs five messages. The tests drive this file with ext-apps' own AppBridge as the host,
 * so the two stay in step.
 */
import { TERMINAL_STATES } from '../../../engine/state-machine.js';
import type { ExecutionProgress } from '../../../executions/execution-presenters.js';

const PROTOCOL_VERSION = '2026-01-26';
const POLL_MS = 1500;
const PROGRESS_URI = 'workflowlookup://workflow/execution_progress/';
const FINISHED = new Set<string>(TERMINAL_STATES);

type Json = Record<string, unknown>;
interface Message {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  params?: Json;
  result?: Json;
  error?: { code: number; message: string };
}

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const pending = new Map<number, { resolve: (r: Json) => void; reject: (e: Error) => void }>();
let nextId = 1;
let hostCapabilities: Json = {};
let timer: ReturnType<typeof setTimeout> | undefined;
let watching: string | undefined;

const post = (message: Message) => window.parent.postMessage(message, '*');

function request(method: string, params: Json): Promise<Json> {
  const id = nextId++;
  post({ jsonrpc: '2.0', id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

const notify = (method: string, params: Json = {}) => post({ jsonrpc: '2.0', method, params });

function text(parent: HTMLElement, tag: string, content: string, className?: string): HTMLElement {
  const el = document.createElement(tag);
  el.textContent = content; // data never becomes markup
  if (className) el.className = className;
  parent.append(el);
  return el;
}

function showValidation(v: { valid: boolean; step?: string; issues: string[] } | null | undefined): void {
  const box = $('validation');
  box.replaceChildren();
  box.className = '';
  if (!v) return;
  box.className = v.valid ? 'ok' : 'bad';
  // The output against the step's rules, not a verdict on the work (see the dashboard's wording).
  text(
    box,
    'div',
    `Last output${v.step ? ` (step ${v.step})` : ''}: ${v.valid ? 'met its rules' : 'refused'}`,
  );
  if (!v.valid && v.issues.length > 0) {
    const list = text(box, 'ul', '');
    for (const issue of v.issues) text(list, 'li', issue);
  }
}

function showHeader(title: string, state: string, current: string | null): void {
  $('title').textContent = title;
  $('state').textContent = state;
  $('state').dataset.state = state;
  $('current').textContent = current ? `Current step: ${current}` : FINISHED.has(state) ? 'Finished.' : '';
  document.body.dataset.state = state;
}

/** The full picture, from the execution_progress resource. */
function showProgress(p: ExecutionProgress): void {
  const current = p.steps.find((s) => s.status === 'current');
  showHeader(`${p.workflow_title}`, p.state, current ? `${current.id} — ${current.title}` : p.current_step);
  const skipped = p.steps.filter((s) => s.status === 'skipped').length;
  $('counts').textContent = `${p.done} of ${p.total} done, ${p.total - p.done - skipped} to go`;
  const bar = $('bar') as HTMLProgressElement;
  bar.max = Math.max(1, p.total);
  bar.value = p.done;
  showValidation(p.last_validation);
  $('steps').replaceChildren(
    ...p.steps.map((s) => {
      const li = document.createElement('li');
      li.className = s.status;
      li.dataset.step = s.id;
      li.textContent = `${s.title} `;
      if (s.loop) text(li, 'span', `(loop ${s.loop})`, 'loop');
      return li;
    }),
  );
}

/** What the tool result alone says (hosts that cannot proxy resource reads show only this). */
function showResult(result: Json): void {
  const r = (result.structuredContent ?? {}) as Json;
  const state = String(r.workflow_state ?? '');
  const step = (r.step_name ?? r.current_step ?? null) as string | null;
  showHeader(String(r.workflow_id ?? r.execution_id ?? 'Workflow execution'), state, step);
  if (typeof r.progress === 'string') $('counts').textContent = `step ${r.progress}`;
  const v = r.validation as { valid: boolean; issues: string[] } | undefined;
  if (v) showValidation({ ...v, ...(typeof r.step_name === 'string' ? { step: r.step_name } : {}) });
  if (typeof r.execution_id === 'string') watch(r.execution_id);
}

async function poll(executionId: string): Promise<void> {
  if (watching !== executionId) return;
  try {
    const read = await request('resources/read', {
      uri: `${PROGRESS_URI}${encodeURIComponent(executionId)}`,
    });
    const first = (read.contents as { text?: string }[] | undefined)?.[0];
    if (first?.text) {
      const progress = JSON.parse(first.text) as ExecutionProgress;
      showProgress(progress);
      if (FINISHED.has(progress.state)) return;
    }
  } catch {
    // The host refused or lost the read: keep what is shown, try again later.
  }
  if (watching === executionId) timer = setTimeout(() => void poll(executionId), POLL_MS);
}

function watch(executionId: string): void {
  clearTimeout(timer);
  watching = executionId;
  if (hostCapabilities.serverResources !== undefined) void poll(executionId);
}

function applyTheme(context: Json | undefined): void {
  const theme = context?.theme;
  if (theme === 'light' || theme === 'dark') document.documentElement.style.colorScheme = theme;
  const vars = ((context?.styles as Json | undefined)?.variables ?? {}) as Record<string, string | undefined>;
  for (const [name, value] of Object.entries(vars)) {
    if (name.startsWith('--') && typeof value === 'string')
      document.documentElement.style.setProperty(name, value);
  }
}

function answer(message: Message): void {
  if (message.method === 'ui/resource-teardown') {
    watching = undefined;
    clearTimeout(timer);
    post({ jsonrpc: '2.0', id: message.id as number, result: {} });
  } else if (message.method === 'ping') {
    post({ jsonrpc: '2.0', id: message.id as number, result: {} });
  } else {
    post({ jsonrpc: '2.0', id: message.id as number, error: { code: -32601, message: 'Method not found' } });
  }
}

window.addEventListener('message', (event: MessageEvent) => {
  if (event.source !== window.parent) return;
  const message = event.data as Message;
  if (message === null || typeof message !== 'object' || message.jsonrpc !== '2.0') return;
  if (message.method === undefined && typeof message.id === 'number') {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter?.reject(new Error(message.error.message));
    else waiter?.resolve(message.result ?? {});
    return;
  }
  if (message.id !== undefined && message.method !== undefined) return answer(message);
  switch (message.method) {
    case 'ui/notifications/tool-result':
      showResult(message.params ?? {});
      break;
    case 'ui/notifications/host-context-changed':
      applyTheme(message.params);
      break;
    case 'ui/notifications/tool-cancelled':
      $('current').textContent = 'The call was cancelled.';
      break;
  }
});

const init = await request('ui/initialize', {
  appInfo: { name: 'workflowlookup-execution', version: '1.0.0' },
  appCapabilities: {},
  protocolVersion: PROTOCOL_VERSION,
});
hostCapabilities = (init.hostCapabilities ?? {}) as Json;
applyTheme(init.hostContext as Json | undefined);
notify('ui/notifications/initialized');
// The height the content needs (not the iframe's current height, which would never let it shrink).
let lastSize = '';
const resized = new ResizeObserver(() => {
  const root = document.documentElement;
  const previous = root.style.height;
  root.style.height = 'max-content';
  const height = Math.ceil(root.getBoundingClientRect().height);
  root.style.height = previous;
  const width = Math.ceil(window.innerWidth);
  if (`${width}x${height}` === lastSize) return;
  lastSize = `${width}x${height}`;
  notify('ui/notifications/size-changed', { width, height });
});
resized.observe(document.documentElement);
resized.observe(document.body);
if (watching !== undefined) watch(watching);
