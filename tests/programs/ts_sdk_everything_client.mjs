// The official TypeScript SDK's client against the everything example over Streamable HTTP
// (for tests/interop/test_sdk_clients_shared.py, where the URL is a round-robin proxy in front of
// several workers sharing one session store).
//
//   node ts_sdk_everything_client.mjs --sdk NODE_MODULES --url URL
//
// One session (the SDK's initialize handshake) with sampling, elicitation and logging handlers:
// it calls the tools that sample, elicit, log and report progress; abandons a slow call (an
// AbortSignal: the SDK sends notifications/cancelled) and makes one more; calls the tool whose
// response stream the server closes mid-call (the SDK resumes it with Last-Event-ID); runs tools
// as 2025-11-25 tasks (the SDK's experimental task API: tasks/get, tasks/result, one task asking
// the user on the way, one cancelled with tasks/cancel). It prints ONE JSON line with what it
// saw and exits 0; on a failure it prints the error to stderr and exits 1.

import path from 'node:path';
import { pathToFileURL } from 'node:url';

const USAGE = 'usage: ts_sdk_everything_client.mjs --sdk NODE_MODULES --url URL';
const SAMPLING_REPLY = 'This is a test response from the client';
const CANCEL_AFTER_MS = 1000;
const TASK_TTL_MS = 60000;
// What the "user" answers to each elicitation form, told apart by its fields.
const ANSWERS = [
  ['username', { username: 'testuser', email: 'test@example.com' }],
  ['confirm', { confirm: true }],
  ['name', { name: 'TS user' }],
];

const [sdkFlag, root, urlFlag, url] = process.argv.slice(2);
if (sdkFlag !== '--sdk' || urlFlag !== '--url' || !url) {
  console.error(USAGE);
  process.exit(2);
}
const sdk = (sub) => import(pathToFileURL(path.join(root, '@modelcontextprotocol', 'sdk', 'dist', 'esm', sub)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const types = await sdk('types.js');

const out = { sampling_requests: [], elicitation_requests: [], logs: [], progress: [], resumption_tokens: [] };
const client = new Client(
  { name: 'ts-sdk-everything-client', version: '1.0' },
  { capabilities: { sampling: {}, elicitation: { form: {} } } },
);
client.setRequestHandler(types.CreateMessageRequestSchema, async (request) => {
  out.sampling_requests.push(request.params);
  return { role: 'assistant', content: { type: 'text', text: SAMPLING_REPLY }, model: 'test-model', stopReason: 'endTurn' };
});
client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
  out.elicitation_requests.push(request.params);
  const fields = request.params.requestedSchema?.properties ?? {};
  for (const [marker, content] of ANSWERS) {
    if (marker in fields) return { action: 'accept', content };
  }
  return { action: 'decline' };
});
client.setNotificationHandler(types.LoggingMessageNotificationSchema, async (notification) => {
  out.logs.push([notification.params.level, notification.params.data]);
});

const textOf = (result) => result.content.map((block) => block.text ?? `<${block.type}>`).join('');

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  out.protocol_version = transport.protocolVersion ?? null;
  out.server_info = client.getServerVersion();
  out.server_capabilities = client.getServerCapabilities();
  out.session_id = transport.sessionId ?? null;
  await client.setLoggingLevel('debug');

  const calls = {};
  for (const [name, args] of [
    ['test_sampling', { prompt: 'Test prompt for sampling' }],
    ['test_elicitation', { message: 'Please provide your information' }],
    ['test_tool_with_logging', {}],
  ]) {
    calls[name] = textOf(await client.callTool({ name, arguments: args }));
  }
  calls.test_tool_with_progress = textOf(
    await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
      onprogress: (p) => out.progress.push([p.progress, p.total ?? null, p.message ?? null]),
    }),
  );

  // cancellation: a slow call abandoned through its AbortSignal, then one more call
  const controller = new AbortController();
  const started = performance.now();
  const timer = setTimeout(() => controller.abort('enough'), CANCEL_AFTER_MS);
  let cancelled = null;
  try {
    await client.callTool({ name: 'slow_compute', arguments: { seconds: 30, label: 'cancel me' } }, undefined, {
      signal: controller.signal,
      timeout: 60000,
    });
  } catch (error) {
    cancelled = String(error);
  } finally {
    clearTimeout(timer);
  }
  out.cancellation = {
    error: cancelled,
    elapsed: (performance.now() - started) / 1000,
    after: textOf(await client.callTool({ name: 'greet', arguments: { name: 'after the cancel' } })),
  };

  // resumption: the server closes this call's response stream mid-call; the SDK resumes it
  calls.test_reconnection = textOf(
    await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, {
      onresumptiontoken: (token) => out.resumption_tokens.push(token),
    }),
  );
  out.calls = calls;

  // tasks (2025-11-25, the SDK's experimental task API)
  out.tasks = {};
  for (const [name, args] of [
    ['slow_compute', { seconds: 0.5, label: 'a task' }],
    ['confirm_delete', { filename: 'task.txt' }],
    ['failing_job', {}],
  ]) {
    const seen = [];
    const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, types.CallToolResultSchema, {
      task: { ttl: TASK_TTL_MS },
      timeout: 10000, // (a task asking the user waits on tasks/result for its answer)
    });
    for await (const message of stream) {
      if (message.type === 'taskCreated' || message.type === 'taskStatus') seen.push(message.task.status);
      else if (message.type === 'result') out.tasks[name] = { statuses: seen, result: message.result };
      else out.tasks[name] = { statuses: seen, error: String(message.error) };
    }
  }
  const created = await client.request(
    { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 30, label: 'cancelled' }, task: { ttl: TASK_TTL_MS } } },
    types.CreateTaskResultSchema,
  );
  const taskId = created.task.taskId;
  out.tasks.cancel = await client.experimental.tasks.cancelTask(taskId);
  out.tasks.cancelled = await client.experimental.tasks.getTask(taskId);

  await new Promise((resolve) => setTimeout(resolve, 50)); // log notifications of the last calls
  await transport.terminateSession();
  await client.close();
}

try {
  await main();
} catch (error) {
  console.error(error?.stack ?? String(error));
  process.exit(1);
}
console.log(JSON.stringify(out));
