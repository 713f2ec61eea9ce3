#!/usr/bin/env node
// Drive `amanmcp serve` with the official MCP TypeScript SDK (@modelcontextprotocol/sdk).
// Usage: node ts_surface.mjs SHIM PROJECT
// With AMANMCP_TEST_HTTP_URL (and AMANMCP_TEST_HTTP_TOKEN) set, the same checks run over the
// daemon's Streamable HTTP endpoint (URL?project=PROJECT) instead of the stdio shim.
// Prints one line per check; exits 1 on the first failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [shim, project] = process.argv.slice(2);
function check(cond, what, detail = '') {
  if (!cond) {
    console.log(`FAIL ${what}: ${JSON.stringify(detail).slice(0, 600)}`);
    process.exit(1);
  }
  console.log(`PASS ${what}`);
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

const httpUrl = process.env.AMANMCP_TEST_HTTP_URL;
const transport = httpUrl
  ? new StreamableHTTPClientTransport(new URL(`${httpUrl}?project=${encodeURIComponent(project)}`), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.AMANMCP_TEST_HTTP_TOKEN}` } },
    })
  : new StdioClientTransport({
      command: shim,
      args: ['serve', '--project', project],
      env: process.env, // the SDK default passes only a few variables
      stderr: 'inherit',
    });
const client = new Client({ name: 'amanmcp-ts-test', version: '0' });
await client.connect(transport);
const caps = client.getServerCapabilities();
check(caps.tools && caps.resources && caps.prompts && caps.logging, 'capabilities', caps);
check(client.getServerVersion().name === 'amanmcp', 'server info', client.getServerVersion());

const tools = (await client.listTools()).tools;
check(['search', 'lookup', 'usages', 'callers', 'callees', 'impact', 'trace', 'similar', 'reindex', 'index-status'].every(n => tools.some(t => t.name === n)), 'tools/list', tools.map(t => t.name));

// search (the SDK validates structuredContent against outputSchema)
let hit;
for (let i = 0; i < 300 && !hit; i++) {
  const r = await client.callTool({ name: 'search', arguments: { query: 'pbkdf2_hmac', limit: 5 } });
  check(!r.isError, 'search call', r);
  hit = r.structuredContent.results.find(h => h.path === 'app/auth.py');
  if (!hit) await sleep(100);
}
check(hit && hit.start_line <= 6 && 6 <= hit.end_line, 'search finds the function', hit);

// semantic and paginated search (the built-in embedder works offline)
let semantic;
for (let i = 0; i < 600; i++) {
  const status = await client.callTool({ name: 'index-status', arguments: {} });
  if (status.structuredContent.state === 'ready') break;
  await sleep(100);
}
semantic = await client.callTool({ name: 'search', arguments: { query: 'check a password against its stored hash', mode: 'semantic', limit: 3 } });
check(!semantic.isError && semantic.structuredContent.semantic === true && semantic.structuredContent.vectors_complete === true, 'semantic search', semantic);
check(semantic.structuredContent.results.length > 0 && semantic.structuredContent.index.embedded === semantic.structuredContent.index.chunks, 'vectors complete', semantic.structuredContent.index);
const page2 = await client.callTool({ name: 'search', arguments: { query: 'password', limit: 1, offset: 1 } });
check(!page2.isError && page2.structuredContent.results.length <= 1, 'offset pages', page2);
const status = await client.callTool({ name: 'index-status', arguments: {} });
check(status.structuredContent.embedding && status.structuredContent.embedding.health === 'ok', 'index-status embedding', status.structuredContent);

const found = await client.callTool({ name: 'lookup', arguments: { symbol: 'verify_password' } });
check(!found.isError && found.structuredContent.matches[0].kind === 'function', 'lookup by symbol', found);

const used = await client.callTool({ name: 'usages', arguments: { name: 'verify_password' } });
const first = used.structuredContent && used.structuredContent.usages[0];
check(!used.isError && first && first.definition === true && first.path === 'app/auth.py', 'usages: the definition first', used);

// The graph tools (structuredContent checked against each outputSchema by the SDK).
const callers = await client.callTool({ name: 'callers', arguments: { symbol: 'verify_password' } });
check(!callers.isError && callers.structuredContent.links.length === 1 && callers.structuredContent.links[0].from === 'app/login.py:4 login' && callers.structuredContent.links[0].label === 'resolved', 'callers', callers.structuredContent);
const callees = await client.callTool({ name: 'callees', arguments: { symbol: 'login' } });
check(!callees.isError && callees.structuredContent.links.some(l => l.to === 'app/auth.py:4 verify_password'), 'callees', callees.structuredContent);
const impact = await client.callTool({ name: 'impact', arguments: { symbols: ['verify_password'] } });
check(!impact.isError && impact.structuredContent.impacted.map(i => i.symbol).join() === 'login', 'impact', impact.structuredContent);
const trace = await client.callTool({ name: 'trace', arguments: { from: 'login', to: 'verify_password' } });
check(!trace.isError && trace.structuredContent.paths.length === 1, 'trace', trace.structuredContent);
const nobody = await client.callTool({ name: 'callers', arguments: { symbol: 'no_such_function' } });
check(nobody.isError === true && nobody.content[0].text.includes('no definition'), 'callers of an unknown name is a tool error', nobody);

const similar = await client.callTool({ name: 'similar', arguments: { snippet: 'digest = hashlib.pbkdf2_hmac("sha256", candidate, user.salt, 1)' } });
check(!similar.isError && similar.structuredContent.results.some(h => h.path === 'app/auth.py'), 'similar by snippet', similar);

const bad = await client.callTool({ name: 'search', arguments: { query: 'x', limit: 'many' } });
check(bad.isError === true && bad.content[0].text.includes('limit'), 'invalid argument is a tool error', bad);
try {
  await client.callTool({ name: 'no-such-tool', arguments: {} });
  check(false, 'unknown tool refused');
} catch (e) {
  check(e.code === -32602, 'unknown tool -> -32602', e.message);
}
try {
  await client.request({ method: 'no/such/method', params: {} }, EmptyResultSchema);
  check(false, 'unknown method refused');
} catch (e) {
  check(e.code === -32601, 'unknown method -> -32601', e.message);
}

// reindex with progress
const progress = [];
const re = await client.callTool({ name: 'reindex', arguments: {} }, undefined, {
  onprogress: p => progress.push(p),
  resetTimeoutOnProgress: true,
});
check(!re.isError && re.structuredContent.scope === 'project', 'reindex', re);
check(progress.length >= 1, 'progress notifications', progress);

// cancellation: abort a reindex; the shim stays usable
const ac = new AbortController();
const pending = client.callTool({ name: 'reindex', arguments: {} }, undefined, { signal: ac.signal });
await sleep(20);
ac.abort('test abort');
let aborted = false;
try { await pending; } catch { aborted = true; }
check(aborted, 'cancelled call rejects on the client');
await client.ping();
const after = await client.callTool({ name: 'search', arguments: { query: 'pbkdf2_hmac' } });
check(!after.isError, 'usable after cancellation', after);

// resources
const resources = (await client.listResources()).resources;
const auth = resources.find(r => r.name === 'app/auth.py');
check(auth && auth.mimeType === 'text/x-python', 'resources/list', resources.slice(0, 3));
const read = await client.readResource({ uri: auth.uri });
check(read.contents[0].text.includes('def verify_password'), 'resources/read', read);
try {
  await client.readResource({ uri: 'file:///etc/passwd' });
  check(false, 'outside resource refused');
} catch (e) {
  check(e.code === -32002, 'outside resource -> -32002', e.message);
}

// prompts and logging
const prompts = (await client.listPrompts()).prompts;
check(prompts.some(p => p.name === 'find-usages'), 'prompts/list', prompts);
const got = await client.getPrompt({ name: 'find-usages', arguments: { symbol: 'verify_password' } });
check(got.messages[0].content.text.includes('verify_password') && got.messages[0].content.text.includes('`usages`'), 'prompts/get', got);
await client.setLoggingLevel('debug');
check(true, 'logging/setLevel');

// a file written now becomes searchable without any client action (watcher)
writeFileSync(join(project, 'late.py'), 'def zlatetoken():\n    return 1\n');
let late;
for (let i = 0; i < 300 && !late; i++) {
  const r = await client.callTool({ name: 'search', arguments: { query: 'zlatetoken' } });
  late = r.structuredContent.results.find(h => h.path === 'late.py');
  if (!late) await sleep(50);
}
check(late, 'fresh file searchable');

await client.close();
console.log('OK');
