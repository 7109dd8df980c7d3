/// <reference lib="dom" />
// A minimal MCP Apps host for the browser test, built on ext-apps' own AppBridge: it renders the
// ui:// view in a sandboxed iframe and forwards the view's resource reads and tool calls to the real
// server (through the test process at /rpc).
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

declare global {
  interface Window {
    hostLog: string[];
    teardown: () => Promise<void>;
  }
}

async function rpc<T>(method: string, params: unknown): Promise<T> {
  const response = await fetch('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: string };
  if (body.error !== undefined) throw new Error(body.error);
  return body.result as T;
}

window.hostLog = [];
const view = await rpc<{ contents: { text: string }[] }>('resources/read', {
  uri: 'ui://workflowlookup/execution-progress.html',
});
const iframe = document.createElement('iframe');
iframe.sandbox.add('allow-scripts'); // an opaque origin: the view cannot touch the host page
iframe.srcdoc = view.contents[0]?.text ?? '';
iframe.width = '460';
iframe.height = '300';
document.body.append(iframe);

const bridge = new AppBridge(
  null,
  { name: 'test-host', version: '1.0.0' },
  { serverTools: {}, serverResources: {} },
  { hostContext: { theme: 'light', displayMode: 'inline' } },
);
bridge.onreadresource = async (params) => {
  window.hostLog.push(`read ${params.uri}`);
  return rpc('resources/read', params);
};
bridge.oncalltool = async (params) => {
  window.hostLog.push(`call ${params.name}`);
  return rpc('tools/call', params);
};
bridge.onsizechange = ({ height }) => {
  if (height) iframe.height = String(height);
};
bridge.oninitialized = async () => {
  window.hostLog.push('initialized');
  const call = await rpc<{
    arguments: Record<string, unknown>;
    result: Parameters<typeof bridge.sendToolResult>[0];
  }>('test/tool-call', {});
  await bridge.sendToolInput({ arguments: call.arguments });
  await bridge.sendToolResult(call.result);
  window.hostLog.push('result sent');
};
window.teardown = async () => {
  await bridge.teardownResource({});
  window.hostLog.push('torn down');
};
await bridge.connect(
  new PostMessageTransport(iframe.contentWindow as Window, iframe.contentWindow as Window),
);
