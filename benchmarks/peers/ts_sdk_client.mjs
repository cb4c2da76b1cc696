// The TypeScript SDK's own `Client` against the TypeScript SDK server: the peer of
// benchmarks/sdk_clients.py for the "own clients" workload.
//
//   node benchmarks/peers/ts_sdk_client.mjs --sdk DIR stdio DURATION -- SERVER-COMMAND...
//   node benchmarks/peers/ts_sdk_client.mjs --sdk DIR http DURATION URL
//
// It connects (for stdio it launches the server), calls `echo` for DURATION seconds after a short
// warm-up, checks every answer, and prints one JSON line: {"calls", "elapsed", "p50_ms", "p99_ms"}.

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const TEXT = 'hello';
const WARMUP_MS = 200;
const USAGE = 'usage: ts_sdk_client.mjs --sdk NODE_MODULES (stdio DURATION -- COMMAND... | http DURATION URL)';
const argv = process.argv.slice(2);
const [flag, root, transportName, durationText, ...target] = argv;
if (flag !== '--sdk' || !['stdio', 'http'].includes(transportName) || target.length === 0) {
  console.error(USAGE);
  process.exit(2);
}
const sdk = (sub) => import(pathToFileURL(path.join(root, '@modelcontextprotocol', 'sdk', 'dist', 'esm', sub)).href);
const { Client } = await sdk('client/index.js');

let transport;
if (transportName === 'stdio') {
  const command = target[0] === '--' ? target.slice(1) : target;
  const { StdioClientTransport } = await sdk('client/stdio.js');
  transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
} else {
  const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(target[0]));
}
const client = new Client({ name: 'bench', version: '1.0' });
await client.connect(transport);

async function call() {
  const result = await client.callTool({ name: 'echo', arguments: { text: TEXT } });
  if (result.content?.[0]?.text !== TEXT) throw new Error(`wrong answer: ${JSON.stringify(result)}`);
}

let end = performance.now() + WARMUP_MS;
while (performance.now() < end) await call();
const latencies = [];
const start = performance.now();
end = start + Number(durationText) * 1000;
for (;;) {
  const t0 = performance.now();
  await call();
  const t1 = performance.now();
  latencies.push(t1 - t0);
  if (t1 >= end) break;
}
const elapsed = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const n = latencies.length;
console.log(
  JSON.stringify({
    calls: n,
    elapsed,
    p50_ms: latencies[Math.floor(n / 2)],
    p99_ms: latencies[Math.min(n - 1, Math.floor(n * 0.99))],
  }),
);
await client.close();
