// The TypeScript SDK's low-level `Server` (npm @modelcontextprotocol/sdk) with echo and sleep.
//
// Run with `node benchmarks/peers/ts_sdk_server.mjs --sdk DIR stdio` or `... --sdk DIR http PORT
// [--host HOST]`, DIR being a node_modules folder holding the SDK (the benchmark installs it,
// pinned, into its cache: benchmarks/_run_node.py).
//
// HTTP is stateful Streamable HTTP with JSON answers (enableJsonResponse) on node:http: an
// `initialize` POST without a session opens a session with its own `Server` and transport; every
// other request goes to the transport of its `Mcp-Session-Id`, which checks it.

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const USAGE = 'usage: ts_sdk_server.mjs --sdk NODE_MODULES (stdio | http PORT [--host HOST])';
const argv = process.argv.slice(2);
if (argv[0] !== '--sdk' || argv.length < 3) {
  console.error(USAGE);
  process.exit(2);
}
const root = argv[1];
const sdk = (sub) => import(pathToFileURL(path.join(root, '@modelcontextprotocol', 'sdk', 'dist', 'esm', sub)).href);
const { Server } = await sdk('server/index.js');
const { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } = await sdk('types.js');

const TOOLS = [
  {
    name: 'echo',
    description: 'Return the text unchanged.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'sleep',
    description: 'Sleep for ms milliseconds.',
    inputSchema: { type: 'object', properties: { ms: { type: 'number' } }, required: ['ms'] },
  },
];

function newServer() {
  const server = new Server({ name: 'bench-ts-sdk-lowlevel', version: '1.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    if (request.params.name === 'echo') {
      return { content: [{ type: 'text', text: String(args.text) }] };
    }
    if (request.params.name === 'sleep') {
      await new Promise((resolve) => setTimeout(resolve, Number(args.ms)));
      return { content: [{ type: 'text', text: 'slept' }] };
    }
    return { content: [{ type: 'text', text: `Unknown tool: ${request.params.name}` }], isError: true };
  });
  return server;
}

const MAX_BODY = 4 << 20;

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function reply(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

async function serveHttp(port, host) {
  const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      if (new URL(req.url, 'http://x').pathname !== '/mcp') return reply(res, 404, 'not found');
      const sid = req.headers['mcp-session-id'];
      if (sid !== undefined) {
        const transport = sessions.get(sid);
        if (!transport) return reply(res, 404, 'unknown session');
        const body = req.method === 'POST' ? JSON.parse((await readBody(req)).toString('utf8')) : undefined;
        return await transport.handleRequest(req, res, body);
      }
      if (req.method !== 'POST') return reply(res, 400, 'no session');
      const body = JSON.parse((await readBody(req)).toString('utf8'));
      if (!isInitializeRequest(body)) return reply(res, 400, 'no session');
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => sessions.set(id, transport),
        onsessionclosed: (id) => sessions.delete(id),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await newServer().connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) reply(res, 400, String(error));
      else res.end();
    }
  });
  httpServer.keepAliveTimeout = 60_000;
  httpServer.listen(port, host);
}

async function serveStdio() {
  const { StdioServerTransport } = await sdk('server/stdio.js');
  await newServer().connect(new StdioServerTransport());
}

const [transport, ...rest] = argv.slice(2);
if (transport === 'stdio') {
  await serveStdio();
} else if (transport === 'http' && rest.length >= 1) {
  const hostAt = rest.indexOf('--host');
  await serveHttp(Number(rest[0]), hostAt >= 0 ? rest[hostAt + 1] : '127.0.0.1');
} else {
  console.error(USAGE);
  process.exit(2);
}
