// MCP resources, toolsets and prompts (issue 28) through the official MCP TypeScript SDK
// (Client + StreamableHTTPClientTransport): resources/list paged, the resource templates, a
// book and a page read, refusals (no books:read scope, another workspace's book); toolsets by
// URL and header, read-only, the extras listed and books_get_page_text called (its output
// validated by the SDK against its outputSchema), the default list of exactly the spec's 55;
// prompts listed and got; completion of book ids (the caller's workspace only).
// Run by httpapi/mcp_resources_clients_test.go; by hand:
//
//   MCP_URL=http://127.0.0.1:8080/mcp/public-api MCP_KEY=wsk_live_… NOREAD_KEY=wsk_live_… \
//   OTHER_KEY=wsk_live_… BOOK_ID=… BOOK_IDS=id1,id2,… OTHER_BOOK=… PAGE_TEXT='…' PAGE_SIZE=2 \
//   node mcp-resources-toolsets-prompts.mjs
//
// MCP_KEY has every scope; BOOK_ID is a converted document of at least 2 pages whose page 2
// contains PAGE_TEXT; BOOK_IDS are every book of MCP_KEY's workspace; NOREAD_KEY is a key of
// the same workspace without books:read; OTHER_KEY a key of another workspace, whose book is
// OTHER_BOOK; PAGE_SIZE the endpoint's --mcp-page-size. Prints one JSON line of the checks
// that passed and exits 1 naming every check that failed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return v;
};
const url = env('MCP_URL');
const key = env('MCP_KEY');
const noReadKey = env('NOREAD_KEY');
const otherKey = env('OTHER_KEY');
const bookID = env('BOOK_ID');
const bookIDs = env('BOOK_IDS').split(',').sort();
const otherBook = env('OTHER_BOOK');
const pageText = env('PAGE_TEXT');
const pageSize = Number(env('PAGE_SIZE'));

// connect opens a client with key, query appended to the URL and extra headers.
async function connect(k, query = '', headers = {}) {
  const client = new Client({ name: 'flipbook-issue-28', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url + query), {
    requestInit: { headers: { Authorization: `Bearer ${k}`, ...headers } },
  });
  await client.connect(transport);
  return client;
}

const passed = [];
const failed = [];
async function check(name, fn) {
  try {
    await fn();
    passed.push(name);
  } catch (e) {
    failed.push(`${name}: ${e?.stack ?? e}`);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
function sameList(got, want, what) {
  const g = [...got].sort();
  const w = [...want].sort();
  assert(JSON.stringify(g) === JSON.stringify(w), `${what}: got ${JSON.stringify(g)}, want ${JSON.stringify(w)}`);
}
// rpcError runs fn, which must throw a JSON-RPC error (McpError), and returns it.
async function rpcError(fn) {
  try {
    await fn();
  } catch (e) {
    assert(typeof e.code === 'number', `not a JSON-RPC error: ${e}`);
    return e;
  }
  throw new Error('no error');
}
async function allTools(client) {
  const names = [];
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return names;
}

const client = await connect(key);

await check('capabilities', async () => {
  const caps = client.getServerCapabilities();
  assert(caps.resources && caps.prompts && caps.completions && caps.tools, JSON.stringify(caps));
});

await check('resources/list pages through the books', async () => {
  const uris = [];
  let cursor;
  let pages = 0;
  do {
    const r = await client.listResources(cursor ? { cursor } : {});
    assert(r.resources.length <= pageSize, `a page of ${r.resources.length}`);
    uris.push(...r.resources.map((x) => x.uri));
    cursor = r.nextCursor;
    pages++;
  } while (cursor);
  assert(pages === Math.ceil(bookIDs.length / pageSize), `${pages} pages`);
  sameList(uris, bookIDs.map((id) => `flipbook://books/${id}`), 'resources');
});

await check('resources/templates/list', async () => {
  const r = await client.listResourceTemplates();
  sameList(r.resourceTemplates.map((t) => t.uriTemplate),
    ['flipbook://books/{book_id}', 'flipbook://books/{book_id}/pages/{page}'], 'templates');
});

await check('resources/read a book', async () => {
  const r = await client.readResource({ uri: `flipbook://books/${bookID}` });
  assert(r.contents.length === 1 && r.contents[0].mimeType === 'application/json', JSON.stringify(r));
  const book = JSON.parse(r.contents[0].text);
  assert(book.data.random_id === bookID, r.contents[0].text);
  const tool = await client.callTool({ name: 'books_get', arguments: { book_id: bookID } });
  assert(JSON.stringify(tool.structuredContent) === JSON.stringify(book), 'the JSON books_get returns');
});

await check('resources/read a page text', async () => {
  const r = await client.readResource({ uri: `flipbook://books/${bookID}/pages/2` });
  const page = JSON.parse(r.contents[0].text);
  assert(page.data.number === 2 && page.data.text.includes(pageText), r.contents[0].text);
  assert(Array.isArray(page.data.words) && page.data.words.length > 0, 'words');
});

await check('resources/read without books:read is refused', async () => {
  const c = await connect(noReadKey);
  const tool = await c.callTool({ name: 'books_get', arguments: { book_id: bookID } });
  assert(tool.isError, 'the tool is refused');
  const toolErr = JSON.parse(tool.content[0].text);
  const e = await rpcError(() => c.readResource({ uri: `flipbook://books/${bookID}` }));
  assert(e.code === -32001, `code ${e.code}`);
  assert(JSON.stringify(e.data) === JSON.stringify(toolErr), `data ${JSON.stringify(e.data)} vs ${tool.content[0].text}`);
  assert(e.data.error.type === 'MissingScope', JSON.stringify(e.data));
  await c.close();
});

await check('another workspace\'s book is not found', async () => {
  for (const uri of [`flipbook://books/${otherBook}`, `flipbook://books/${otherBook}/pages/1`]) {
    const e = await rpcError(() => client.readResource({ uri }));
    assert(e.code === -32002, `code ${e.code}`);
    assert(e.data?.uri === uri, JSON.stringify(e.data));
  }
});

await check('default tools/list is exactly 55', async () => {
  const names = await allTools(client);
  assert(names.length === 55, `${names.length} tools`);
  assert(!names.includes('books_get_page_text'), 'no extras by default');
});

await check('toolsets by URL', async () => {
  const c = await connect(key, '?toolsets=books,analytics');
  const names = await allTools(c);
  assert(names.length === 18 && names.every((n) => n.startsWith('books_') || n.startsWith('analytics_')), names.join());
  await c.close();
});

await check('toolsets by header', async () => {
  const c = await connect(key, '', { 'X-MCP-Toolsets': 'webhooks' });
  const names = await allTools(c);
  assert(names.length === 8 && names.every((n) => n.startsWith('webhooks_')), names.join());
  const e = await rpcError(() => c.callTool({ name: 'books_get', arguments: { book_id: bookID } }));
  assert(e.code === -32602, `a tool outside the set is unknown: ${e.code} ${e.message}`);
  await c.close();
});

await check('read-only', async () => {
  const c = await connect(key, '', { 'X-MCP-Readonly': 'true' });
  const r = [];
  let cursor;
  do {
    const page = await c.listTools(cursor ? { cursor } : {});
    r.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  assert(r.length > 20 && r.length < 55, `${r.length} tools`);
  assert(r.every((t) => t.annotations?.readOnlyHint === true), 'only read-only tools');
  await c.close();
});

await check('extras: listed and books_get_page_text called', async () => {
  const c = await connect(key, '?toolsets=extras');
  const names = await allTools(c);
  assert(names.includes('books_get_page_text') && names.includes('books_list_pages'), names.join());
  assert(!names.includes('books_get'), 'extras alone');
  const res = await c.callTool({ name: 'books_get_page_text', arguments: { book_id: bookID, page: 2 } });
  assert(!res.isError && res.structuredContent.data.text.includes(pageText), JSON.stringify(res));
  const all = await allTools(await connect(key, '?toolsets=all'));
  assert(all.length === 55 + names.length, `all: ${all.length}`);
  await c.close();
});

await check('prompts/list and prompts/get', async () => {
  const prompts = [];
  let cursor;
  do { // paginated by the endpoint's page size
    const page = await client.listPrompts(cursor ? { cursor } : {});
    prompts.push(...page.prompts);
    cursor = page.nextCursor;
  } while (cursor);
  sameList(prompts.map((p) => p.name), ['book_engagement_report', 'publishing_checklist', 'answer_from_book'], 'prompts');
  const got = await client.getPrompt({ name: 'book_engagement_report',
    arguments: { book_id: bookID, date_from: '2026-01-01', date_to: '2026-01-31' } });
  const text = got.messages[0].content.text;
  for (const tool of ['books_get', 'analytics_list_book_view_events', 'analytics_get_book_flow', 'analytics_list_page_performance']) {
    assert(text.includes(`Call ${tool} with`), `${tool} named`);
  }
  const ans = await client.getPrompt({ name: 'answer_from_book', arguments: { book_id: bookID, question: 'What is on page two?' } });
  assert(ans.messages[0].content.text.includes('books_get_page_text'), 'answer names books_get_page_text');
  const chk = await client.getPrompt({ name: 'publishing_checklist', arguments: { book_id: bookID } });
  assert(chk.messages[0].content.text.includes('books_update_settings'), 'checklist names books_update_settings');
  const e = await rpcError(() => client.getPrompt({ name: 'publishing_checklist', arguments: { book_id: otherBook } }));
  assert(e.code === -32602, `another workspace's book: ${e.code}`);
});

await check('completion of book ids: own workspace only', async () => {
  const r = await client.complete({ ref: { type: 'ref/prompt', name: 'book_engagement_report' }, argument: { name: 'book_id', value: '' } });
  sameList(r.completion.values, bookIDs, 'all own books');
  const prefix = bookID.slice(0, 3);
  const p = await client.complete({ ref: { type: 'ref/resource', uri: 'flipbook://books/{book_id}' }, argument: { name: 'book_id', value: prefix } });
  assert(p.completion.values.includes(bookID), 'the book by prefix');
  assert(p.completion.values.every((v) => v.toLowerCase().startsWith(prefix.toLowerCase())), 'only matching');
  const o = await client.complete({ ref: { type: 'ref/prompt', name: 'answer_from_book' }, argument: { name: 'book_id', value: otherBook } });
  assert(o.completion.values.length === 0, 'no other workspace\'s id');
  const oc = await connect(otherKey);
  const theirs = await oc.complete({ ref: { type: 'ref/prompt', name: 'answer_from_book' }, argument: { name: 'book_id', value: '' } });
  sameList(theirs.completion.values, [otherBook], 'the other workspace completes its own');
  await oc.close();
});

await client.close();
console.log(JSON.stringify({ passed, failed: failed.length }));
if (failed.length > 0) {
  console.error(failed.join('\n\n'));
  process.exit(1);
}
