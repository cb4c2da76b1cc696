// The harness check's Node peer: node:http answering every POST as benchmarks/peers/_trivial.py
// does (the least work that still looks like MCP to the load generator), no SDK at all.
//
// Run with `node benchmarks/peers/trivial_node.mjs http PORT [--host HOST]`. A request gets
// {"jsonrpc": "2.0", "id": <its id>, "result": {"content": [{"type": "text", "text": <its text>}]}}
// (`initialize` gets a result with the protocol version and an Mcp-Session-Id); a notification
// gets 202. Beside the trivial Python responders, it tells what the load generator costs per
// request and how fast a Node process answers when it does almost nothing
// (`python -m benchmarks.run --check-peer`).

import { randomUUID } from 'node:crypto';
import http from 'node:http';

const argv = process.argv.slice(2);
if (argv[0] !== 'http' || argv.length < 2) {
  console.error('usage: trivial_node.mjs http PORT [--host HOST]');
  process.exit(2);
}
const port = Number(argv[1]);
const host = argv[2] === '--host' ? argv[3] : '127.0.0.1';

function answer(text) {
  let message;
  try {
    message = JSON.parse(text);
  } catch {
    return [400, { 'content-type': 'application/json' }, '{"error": "bad json"}'];
  }
  if (message === null || typeof message !== 'object' || !('id' in message)) return [202, {}, ''];
  const headers = { 'content-type': 'application/json' };
  let result = { content: [{ type: 'text', text: message.params?.arguments?.text ?? 'ok' }] };
  if (message.method === 'initialize') {
    result = {
      protocolVersion: message.params?.protocolVersion ?? '2025-11-25',
      capabilities: { tools: {} },
      serverInfo: { name: 'trivial', version: '1.0' },
    };
    headers['mcp-session-id'] = randomUUID();
  }
  return [200, headers, JSON.stringify({ jsonrpc: '2.0', id: message.id, result })];
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const [status, headers, body] =
      req.method === 'POST' ? answer(Buffer.concat(chunks).toString('utf8')) : [200, {}, ''];
    headers['content-length'] = Buffer.byteLength(body);
    res.writeHead(status, headers);
    res.end(body);
  });
});
server.keepAliveTimeout = 0; // (the load generator's connections stay open for the whole run)
server.listen(port, host, () => console.error(`trivial node server at http://${host}:${port}/mcp`));
