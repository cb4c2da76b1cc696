// A client written with the official TypeScript SDK (npm @modelcontextprotocol/sdk), for
// `mcp-trio fuzz --client`. The fuzzer appends its server's URL (or, after `--stdio`, the command
// of a stdio server). It lists and calls what a typical client does (tools, resources, prompts, a
// ping), printing each call's error and going on; exit status 0 when the session ended normally,
// 1 when it broke. CommonJS, so that NODE_PATH (set by `python -m fuzz.campaigns` to its pinned
// node_modules) resolves the SDK.
'use strict';
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const CALL_TIMEOUT_MS = 10000;

async function main() {
  const args = process.argv.slice(2);
  const at = args.indexOf('--stdio');
  const server = at >= 0 ? args.slice(at + 1) : args.slice(-1);
  if (server.length === 0) {
    console.error('usage: ts_sdk_client.cjs SERVER_URL | --stdio SERVER_COMMAND...');
    return 2;
  }
  const transport = server.length === 1 && server[0].includes('://')
    ? new StreamableHTTPClientTransport(new URL(server[0]))
    : new StdioClientTransport({ command: server[0], args: server.slice(1), stderr: 'inherit' });
  const client = new Client(
    { name: 'fuzz-target-ts-sdk-client', version: '1' },
    { capabilities: { sampling: {}, roots: { listChanged: true } } },
  );
  const { CreateMessageRequestSchema, ListRootsRequestSchema } = require('@modelcontextprotocol/sdk/types.js');
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'fuzz',
  }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
  const options = { timeout: CALL_TIMEOUT_MS };
  await client.connect(transport, options);
  const calls = [
    ['ping', () => client.ping(options)],
    ['tools/list', () => client.listTools({}, options)],
    ['tools/call', () => client.callTool({ name: 'echo', arguments: { text: 'hi' } }, undefined, options)],
    ['resources/list', () => client.listResources({}, options)],
    ['resources/read', () => client.readResource({ uri: 'fuzz://greeting' }, options)],
    ['prompts/list', () => client.listPrompts({}, options)],
  ];
  for (const [name, call] of calls) {
    try {
      await call();
    } catch (err) {
      console.error(`${name}: ${String(err).slice(0, 300)}`);
    }
  }
  await client.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => { console.error(`session failed: ${String(err).slice(0, 2000)}`); process.exit(1); },
);
