// Every tool of the service called at least once, with valid arguments, through the official
// MCP TypeScript SDK (Client + StreamableHTTPClientTransport with the API key header), which
// checks each result's structuredContent against the tool's outputSchema (and this script, that
// the content has no property the schema does not declare). Exits 1 naming every tool that
// failed: a tool error, an output the SDK refused, an undeclared property, or a tool never called.
// docs/CLIENTS.md. Run by httpapi/clients_mcp_test.go (make test); by hand:
//
//   MCP_URL=http://127.0.0.1:8080/mcp/public-api MCP_KEY=wsk_live_… BOOK_ID=… VIEWER_ID=… \
//   HOOK_URL=https://receiver.example/hook node mcp-all-tools.mjs
//
// The key needs every scope on the company plan. BOOK_ID is a published book with reader
// activity (views of VIEWER_ID among them); HOOK_URL is a webhook receiver the service may send
// to (answering 2xx).
import { deflateSync, crc32 } from 'node:zlib';
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
const bookID = env('BOOK_ID');
const viewerID = Number(env('VIEWER_ID'));
const hookURL = env('HOOK_URL');

// png is a real w×h PNG (RGB, unfiltered rows), base64.
function png(w, h) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    const row = y * (w * 3 + 1);
    for (let x = 0; x < w; x++) {
      raw[row + 1 + x * 3] = (x * 5) & 255;
      raw[row + 2 + x * 3] = (y * 3) & 255;
      raw[row + 3 + x * 3] = 120;
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64');
}

const client = new Client({ name: 'flipbook-all-tools', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);

// tools/list, every page. The SDK keeps the output validators of the last listTools answer
// only (cacheToolMetadata clears them first), so with more than one page they are rebuilt
// from the whole list: every tool's output is then validated, not only the last page's.
const tools = [];
let cursor;
let pages = 0;
do {
  const r = await client.listTools(cursor ? { cursor } : {});
  tools.push(...r.tools);
  cursor = r.nextCursor;
  pages++;
} while (cursor);
if (pages > 1) client.cacheToolMetadata(tools);

const failures = new Map(); // tool → why
const succeeded = new Set();
const timings = [];

// undeclared lists the properties of value that schema does not declare, where schema is an
// object schema with properties and no additionalProperties (a schema without properties is
// free-form). The SDK's validator checks types and required properties only; this holds the
// outputSchema to the structured content the other way too, as TestOpenAPIDocumentMatchesResponses
// does for REST. An anyOf is satisfied by its closest branch.
function undeclared(schema, value, path) {
  if (typeof schema !== 'object' || schema === null) return [];
  if (Array.isArray(schema.anyOf)) {
    let best;
    for (const branch of schema.anyOf) {
      if (!typeMatches(branch.type, value)) continue;
      const found = undeclared(branch, value, path);
      if (best === undefined || found.length < best.length) best = found;
    }
    return best ?? [];
  }
  if (Array.isArray(value)) {
    return schema.items ? value.flatMap((v, i) => undeclared(schema.items, v, `${path}[${i}]`)) : [];
  }
  if (typeof value !== 'object' || value === null || !schema.properties) return [];
  const out = [];
  for (const [k, v] of Object.entries(value)) {
    const sub = schema.properties[k];
    if (sub !== undefined) out.push(...undeclared(sub, v, `${path}.${k}`));
    else if (schema.additionalProperties === undefined || schema.additionalProperties === false) out.push(`${path}.${k}`);
    else out.push(...undeclared(schema.additionalProperties, v, `${path}.${k}`));
  }
  return out;
}

function typeMatches(type, value) {
  if (type === undefined) return true;
  if (value === null) return type === 'null';
  if (Array.isArray(value)) return type === 'array';
  if (typeof value === 'object') return type === 'object';
  if (typeof value === 'number') return type === 'number' || (type === 'integer' && Number.isInteger(value));
  return type === typeof value;
}

// call calls a tool and returns its structuredContent, or undefined after recording why the
// call failed (a thrown error: transport, JSON-RPC, or the SDK's output-schema check; or a
// result with isError).
async function call(name, args = {}) {
  const t0 = performance.now();
  try {
    const res = await client.callTool({ name, arguments: args });
    timings.push([name, Math.round(performance.now() - t0)]);
    if (res.isError) {
      failures.set(name, `isError: ${res.content?.[0]?.text ?? JSON.stringify(res)}`);
      return undefined;
    }
    const tool = tools.find((t) => t.name === name);
    if (tool?.outputSchema && !client.getToolOutputValidator(name)) {
      failures.set(name, 'the SDK holds no output validator for the tool');
      return undefined;
    }
    const extra = tool?.outputSchema ? undeclared(tool.outputSchema, res.structuredContent, '$') : [];
    if (extra.length > 0) {
      failures.set(name, `structuredContent has properties its outputSchema does not declare: ${extra.join(', ')}`);
      return undefined;
    }
    succeeded.add(name);
    return res.structuredContent;
  } catch (err) {
    failures.set(name, `${err?.name ?? 'Error'}: ${err?.message ?? err}`);
    return undefined;
  }
}

// until calls a tool until done(structuredContent) holds (an asynchronous job finishing).
async function until(name, args, done, seconds = 60) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const out = await call(name, args);
    if (out === undefined || done(out)) return out;
    if (Date.now() > deadline) {
      failures.set(name, `not done within ${seconds}s: ${JSON.stringify(out).slice(0, 500)}`);
      return undefined;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const image = png(40, 60);
const idem = () => crypto.randomUUID();

// General.
await call('health_check');
await call('identity_get');

// Books.
await call('books_list', { limit: 5, sort: '-created_at' });
await call('books_get', { book_id: bookID });
const made = await call('books_create_konva', {
  title: 'From the TypeScript SDK',
  canvas: { width: 600, height: 800, orientation: 'portrait', objects: [{ type: 'image' }] },
  page_images: [image, png(41, 60)],
  status: 'draft',
  idempotency_key: idem(),
});
const rid = made?.data?.random_id ?? bookID;
await call('books_update_settings', { book_id: rid, status: 'publish', title: 'Renamed by the SDK', background: null });
await call('books_create_from_template', {
  source: 'wordpress',
  source_type: 'posts',
  content: [{ id: '1', title: 'Hello', content: '<p>First post</p>', author: null }],
});
const up = await call('books_upload_pdfs', { files: [png(200, 300)], original_filename: 'cover.png', status: 'draft' });
const batch = up?.data?.batch_id;
if (batch) {
  await until('books_get_batch', { batch_id: batch }, (o) => ['completed', 'failed', 'cancelled'].includes(o.data.status));
  await call('books_get_upload_status', { batch_id: batch });
}
await call('books_get_active_upload_status');

// Access lists, embed domains, tracked links.
await call('subscribers_create', { book_id: rid, email: 'reader@example.com', type: 'email' });
await call('subscribers_list', { 'pagination[per_page]': 10 });
await call('books_create_embed_domain', { book_id: rid, domain: 'shop.example.com' });
await call('books_list_embed_domains', { book_id: rid });
await call('tracked_links_create', { book_id: rid, name: 'Footer', channel: 'email' });
await call('books_list_tracked_links', { book_id: bookID });

// Brand.
await call('brand_get');
const brand = await call('brand_create', { company_name: 'Acme', logo_base64: image, primary_color: '#112233' });
const brandID = brand?.data?.brand?.id;
if (brandID !== undefined) await call('brand_update', { id: brandID, company_name: 'Acme Inc' });
await call('brand_toggle_take_over_branding', { idempotency_key: idem() });

// Analytics of the book with reader activity.
const views = await call('analytics_list_book_view_events', { book_id: bookID, limit: 5 });
await call('analytics_list_interaction_events', { book_id: bookID, limit: 50 });
await call('analytics_list_audit_log', { book_id: bookID });
await call('analytics_list_page_performance', { book_id: bookID });
await call('analytics_get_book_flow', { book_id: bookID });
await call('analytics_list_readers', { book_id: bookID, include_anonymous: true });
await call('analytics_list_reader_pages', { book_id: bookID, include_anonymous: true });
const viewEvent = views?.data?.[0]?.id;
if (viewEvent !== undefined) {
  await call('analytics_list_reading_session_pages', { book_id: bookID, view_event_id: viewEvent });
} else {
  failures.set('analytics_list_reading_session_pages', 'no view event to ask about (analytics_list_book_view_events answered none)');
}
await call('analytics_get_reader_journey', { viewer_id: viewerID });

// Exports: inline, and one stored in the workspace's export area.
for (const t of ['analytics', 'leads', 'interaction_events', 'readers', 'reader_pages', 'page_performance', 'audit_log', 'access_audit']) {
  await call(`exports_download_book_${t}_csv`, { book_id: bookID });
}
await call('exports_download_book_analytics_csv', { book_id: bookID, output_path: 'sdk/analytics.csv' });

// Catalogs.
const product = (id, title) => ({ external_product_id: id, title, price: '10.00', currency: 'EUR' });
await call('catalogs_list_templates', { type: 'product' });
const cat = await call('catalogs_create', { name: 'SDK shop', source: 'custom', items: [product('a1', 'Lamp'), product('a2', 'Desk')] });
const catID = cat?.data?.catalog?.id;
const jobDone = (o) => ['completed', 'failed', 'cancelled'].includes(o.data.sync_job.status);
if (catID !== undefined) {
  await until('catalogs_get_sync_job', { catalog_id: catID, sync_job_id: cat.data.sync_job.id }, jobDone);
  const upsert = await call('catalogs_bulk_upsert_items', { catalog_id: catID, items: [product('a3', 'Chair')] });
  if (upsert) await until('catalogs_get_sync_job', { catalog_id: catID, sync_job_id: upsert.data.sync_job.id }, jobDone);
  const avail = await call('catalogs_update_item_availability', {
    catalog_id: catID,
    items: [{ external_product_id: 'a3', available: false }],
  });
  if (avail) await until('catalogs_get_sync_job', { catalog_id: catID, sync_job_id: avail.data.sync_job.id }, jobDone);
  await call('catalogs_list', { limit: 5 });
  await call('catalogs_get', { catalog_id: catID });
  await call('catalogs_list_items', { catalog_id: catID, limit: 10 });
  await call('catalogs_render', { catalog_id: catID, items: ['a1', 'a2'] });
}

// Webhooks.
await call('webhooks_get_subscription_options');
await call('webhooks_list_sample_events', { event_types: 'flipbook_opened,session_ended', limit: 2 });
const sub = await call('webhooks_create_subscription', {
  name: 'crm',
  provider: 'generic',
  target_url: hookURL,
  event_types: ['flipbook_opened', { value: 'session_ended' }],
  signing_secret: 'whsec_0123456789abcdef',
  filters: { book_ids: [bookID], tracked_link_ids: null },
});
const subID = sub?.data?.id;
await call('webhooks_list_subscriptions');
if (subID !== undefined) {
  await call('webhooks_update_subscription', { subscription_id: subID, name: 'crm 2', event_types: ['link_clicked'] });
  await call('webhooks_test_subscription', { subscription_id: subID, event_type: 'link_clicked' });
  await call('webhooks_list_subscription_deliveries', { subscription_id: subID, limit: 5 });
}
await call('webhooks_dispatch_sample', { event: 'flipbook.created', url: hookURL });

await client.close();

for (const t of tools) {
  if (!succeeded.has(t.name) && !failures.has(t.name)) failures.set(t.name, 'never called');
}
const slowest = timings.sort((a, b) => b[1] - a[1]).slice(0, 5);
console.log(JSON.stringify({ tools: tools.length, pages, calls: timings.length, succeeded: succeeded.size, slowest_ms: slowest }));
if (failures.size > 0) {
  for (const [name, why] of failures) console.error(`FAIL ${name}: ${why}`);
  console.error(`${failures.size} of ${tools.length} tools failed`);
  process.exit(1);
}
