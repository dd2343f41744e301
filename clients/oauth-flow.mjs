// The MCP TypeScript SDK's own OAuth client against the service, as an MCP host runs it:
// StreamableHTTPClientTransport with an OAuthClientProvider. Discovery from the 401
// (WWW-Authenticate resource_metadata), registration (dynamic, RFC 7591, or a Client ID
// Metadata Document), the consent page approved with an API key the way a person does (the
// authorization URL the SDK hands to redirectToAuthorization is opened, the form submitted with
// the key, the code taken from the redirect), the code exchanged with PKCE and resource,
// tools/list, a tool call, then a refresh (the access token is made invalid, so the next call
// gets a 401 and the SDK refreshes) and another call.
//
// Environment:
//   FLIPBOOK_URL      the service's base URL (http://127.0.0.1:port)
//   FLIPBOOK_KEY      an API key of the workspace, entered on the consent page
//   OAUTH_MODE        dcr (dynamic registration) or cimd (client ID metadata document)
//   OAUTH_CIMD_URL    cimd: the https URL of the client's metadata document (its client_id)
//   OAUTH_REDIRECT    the redirect URI the host listens on (never contacted: the redirect is read
//                     from the consent form's answer)
//   OAUTH_REGISTER_REDIRECT  dcr: the redirect URI registered (default OAUTH_REDIRECT)
//   OAUTH_STATE       1: the host supplies a state (OAuthClientProvider.state); 0: it does not
//   OAUTH_TOOLS       the number of tools tools/list must return
//   OAUTH_TOOL        the tool to call, OAUTH_TOOL_ARGS its arguments (JSON)
//
// Prints one JSON line describing what happened; exits 1 with the reason on any failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { randomBytes } from 'node:crypto';

const env = (name, def) => {
  const v = process.env[name] ?? def;
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};

function fail(msg) {
  throw new Error(msg);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

// An OAuthClientProvider as a host implements it, in memory.
class HostProvider {
  constructor({ redirect, registerRedirect, cimdUrl, withState }) {
    this._redirect = redirect;
    this._registerRedirect = registerRedirect;
    if (cimdUrl) this.clientMetadataUrl = cimdUrl;
    if (withState) {
      this.states = [];
      // The SDK calls state() only when the provider has it.
      this.state = async () => {
        const s = randomBytes(16).toString('hex');
        this.states.push(s);
        return s;
      };
    }
    this.saved = { client: undefined, tokens: undefined, verifier: undefined };
    this.authorizationUrls = [];
    this.tokenSaves = 0;
  }
  get redirectUrl() {
    return this._redirect;
  }
  get clientMetadata() {
    return {
      client_name: 'SDK OAuth flow (flipbook tests)',
      redirect_uris: [this._registerRedirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
    this.tokenSaves++;
  }
  redirectToAuthorization(url) {
    this.authorizationUrls.push(new URL(url));
  }
  saveCodeVerifier(v) {
    this.saved.verifier = v;
  }
  codeVerifier() {
    check(this.saved.verifier, 'no code verifier was saved');
    return this.saved.verifier;
  }
}

// Every request the SDK makes (MCP and OAuth) goes through this fetch: it is recorded.
const requests = [];
async function recordingFetch(input, init = {}) {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  let form;
  if (init.body instanceof URLSearchParams) form = Object.fromEntries(init.body);
  else if (typeof init.body === 'string' && url.pathname.startsWith('/oauth/')) {
    try {
      form = Object.fromEntries(new URLSearchParams(init.body));
    } catch {
      // not a form
    }
  }
  const res = await fetch(input, init);
  requests.push({ method: init.method ?? 'GET', path: url.pathname, form, status: res.status,
    wwwAuthenticate: res.headers.get('www-authenticate') ?? undefined });
  return res;
}

function decodeHTML(s) {
  return s
    .replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d) => String.fromCodePoint(parseInt(d, 10)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

// consent opens the authorization URL as a browser would, approves with key, and returns the
// query of the redirect to the host.
async function consent(authURL, key) {
  const page = await fetch(authURL, { redirect: 'manual' });
  const html = await page.text();
  check(page.status === 200, `the consent page answered ${page.status} ${page.headers.get('location') ?? ''}: ${html.slice(0, 500)}`);
  const cookies = (page.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]);
  check(cookies.some((c) => c.startsWith('fb_oauth_csrf=')), 'the consent page set no CSRF cookie');
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.append(m[1], decodeHTML(m[2]));
  }
  check(form.get('csrf_token'), 'the consent form has no csrf_token');
  form.set('api_key', key);
  form.set('decision', 'approve');
  const res = await fetch(new URL('/oauth/authorize', authURL), {
    method: 'POST', redirect: 'manual', body: form,
    headers: { cookie: cookies.join('; '), 'content-type': 'application/x-www-form-urlencoded' },
  });
  const body = await res.text();
  check([302, 303].includes(res.status), `approving answered ${res.status}: ${body.slice(0, 500)}`);
  const loc = new URL(res.headers.get('location'));
  return { location: loc, query: loc.searchParams };
}

async function main() {
  const base = env('FLIPBOOK_URL');
  const key = env('FLIPBOOK_KEY');
  const mode = env('OAUTH_MODE');
  const withState = env('OAUTH_STATE', '1') === '1';
  const redirect = env('OAUTH_REDIRECT');
  const wantTools = Number(env('OAUTH_TOOLS', '55'));
  const tool = env('OAUTH_TOOL', 'books_list');
  const toolArgs = JSON.parse(env('OAUTH_TOOL_ARGS', '{"limit": 5}'));
  check(mode === 'dcr' || mode === 'cimd', `OAUTH_MODE must be dcr or cimd, not ${mode}`);
  const cimdUrl = mode === 'cimd' ? env('OAUTH_CIMD_URL') : undefined;
  const mcpURL = new URL('/mcp/public-api', base);
  const resource = mcpURL.href;

  const provider = new HostProvider({ redirect, registerRedirect: env('OAUTH_REGISTER_REDIRECT', redirect), cimdUrl, withState });
  const out = { mode, state: withState };

  // 1. Connect without a token: 401, discovery, registration, then the authorization URL.
  const t1 = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: recordingFetch });
  const c1 = new Client({ name: 'flipbook-oauth-flow', version: '1.0.0' });
  try {
    await c1.connect(t1);
    fail('connecting without a token succeeded');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const first = requests[0];
  check(first && first.status === 401, `the first request answered ${first?.status}`);
  check(/resource_metadata="[^"]+"/.test(first.wwwAuthenticate ?? ''), `the 401 names no resource_metadata: ${first.wwwAuthenticate}`);
  check(requests.some((r) => r.path.startsWith('/.well-known/oauth-protected-resource') && r.status === 200),
    'the protected resource metadata was not fetched');
  check(requests.some((r) => r.path === '/.well-known/oauth-authorization-server' && r.status === 200),
    'the authorization server metadata was not fetched');
  const registrations = requests.filter((r) => r.path === '/oauth/register');
  if (mode === 'dcr') {
    check(registrations.length === 1 && registrations[0].status === 201, `registration: ${JSON.stringify(registrations)}`);
    const c = provider.saved.client;
    for (const f of ['client_id', 'client_id_issued_at', 'redirect_uris', 'grant_types', 'response_types', 'token_endpoint_auth_method']) {
      check(c?.[f] !== undefined, `the registration answer lacks ${f}: ${JSON.stringify(c)}`);
    }
    check(c.token_endpoint_auth_method === 'none', `token_endpoint_auth_method ${c.token_endpoint_auth_method}`);
    check(c.client_secret === undefined, 'a public client got a secret');
  } else {
    check(registrations.length === 0, 'a metadata-document client registered');
    check(provider.saved.client?.client_id === cimdUrl, `client_id ${provider.saved.client?.client_id}, not the document URL`);
  }
  out.client_id = provider.saved.client.client_id;

  check(provider.authorizationUrls.length === 1, `redirectToAuthorization was called ${provider.authorizationUrls.length} times`);
  const authURL = provider.authorizationUrls[0];
  const ap = authURL.searchParams;
  check(ap.get('code_challenge_method') === 'S256' && ap.get('code_challenge'), 'no S256 PKCE in the authorization URL');
  check(ap.get('resource') === resource, `the authorization URL's resource is ${ap.get('resource')}, not ${resource}`);
  check(ap.get('client_id') === out.client_id, 'the authorization URL names another client');
  check(ap.get('redirect_uri') === redirect, `redirect_uri ${ap.get('redirect_uri')}`);
  check(withState ? ap.get('state') === provider.states.at(-1) : !ap.has('state'),
    `state in the authorization URL: ${ap.get('state')} (host state: ${withState})`);
  out.scope = ap.get('scope');

  // 2. The person approves with the key; the host receives the code at its redirect URI.
  const { location, query } = await consent(authURL, key);
  check(`${location.origin}${location.pathname}` === redirect.replace(/\/$/, '') || location.href.startsWith(redirect),
    `redirected to ${location.href}, not ${redirect}`);
  check(!query.get('error'), `the authorization failed: ${query.get('error')}: ${query.get('error_description')}`);
  const code = query.get('code');
  check(code, `no code in ${location.href}`);
  if (withState) check(query.get('state') === ap.get('state'), `state came back as ${query.get('state')}`);
  else check(!query.has('state'), `a state came back without one sent: ${location.href}`);

  // 3. The code, with PKCE and resource, for tokens.
  await t1.finishAuth(code);
  const exchange = requests.filter((r) => r.path === '/oauth/token').at(-1);
  check(exchange?.status === 200, `the code exchange answered ${exchange?.status}`);
  check(exchange.form?.grant_type === 'authorization_code', `grant_type ${exchange.form?.grant_type}`);
  check(exchange.form?.resource === resource, `the code exchange's resource is ${exchange.form?.resource}`);
  check(exchange.form?.code_verifier, 'the code exchange has no code_verifier');
  const tokens1 = provider.tokens();
  check(tokens1?.access_token && tokens1?.refresh_token, `tokens: ${JSON.stringify(Object.keys(tokens1 ?? {}))}`);
  await c1.close();

  // 4. Connected with the token: tools/list and a call.
  const t2 = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider, fetch: recordingFetch });
  const c2 = new Client({ name: 'flipbook-oauth-flow', version: '1.0.0' });
  await c2.connect(t2);
  const tools = [];
  let cursor;
  do {
    const page = await c2.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  check(tools.length === wantTools, `tools/list returned ${tools.length} tools, not ${wantTools}`);
  check(tools.some((t) => t.name === tool), `no tool ${tool}`);
  out.tools = tools.length;
  const r1 = await c2.callTool({ name: tool, arguments: toolArgs });
  check(!r1.isError, `${tool} failed: ${JSON.stringify(r1.content)}`);

  // 5. The access token stops being valid (as when it expires): the next call gets a 401, the
  // SDK refreshes with the refresh token (and resource) and retries.
  const before = requests.length;
  provider.saved.tokens = { ...tokens1, access_token: 'ory_at_expired.' + randomBytes(16).toString('hex') };
  const r2 = await c2.callTool({ name: tool, arguments: toolArgs });
  check(!r2.isError, `${tool} after the refresh failed: ${JSON.stringify(r2.content)}`);
  const after = requests.slice(before);
  check(after.some((r) => r.status === 401 && r.path === mcpURL.pathname), 'the invalid token was not refused');
  const refresh = after.find((r) => r.path === '/oauth/token');
  check(refresh?.status === 200 && refresh.form?.grant_type === 'refresh_token', `the refresh: ${JSON.stringify(refresh)}`);
  check(refresh.form?.resource === resource, `the refresh's resource is ${refresh.form?.resource}`);
  const tokens2 = provider.tokens();
  check(tokens2.access_token !== tokens1.access_token && tokens2.refresh_token !== tokens1.refresh_token,
    'the refresh did not rotate the tokens');
  check(!after.some((r) => r.path === '/oauth/register' || r.path === '/oauth/authorize'), 'the refresh registered or authorized again');
  // And the refreshed token keeps working.
  const r3 = await c2.callTool({ name: tool, arguments: toolArgs });
  check(!r3.isError, `${tool} with the refreshed token failed: ${JSON.stringify(r3.content)}`);
  await c2.close();

  out.registrations = requests.filter((r) => r.path === '/oauth/register').length;
  out.token_requests = requests.filter((r) => r.path === '/oauth/token').map((r) => r.form?.grant_type);
  out.refresh_token = tokens2.refresh_token;
  out.access_token = tokens2.access_token;
  console.log(JSON.stringify(out));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`oauth-flow (${process.env.OAUTH_MODE}, state ${process.env.OAUTH_STATE}): FAILED: ${e?.stack ?? e}`);
    console.error('requests: ' + JSON.stringify(requests.map((r) => `${r.method} ${r.path} ${r.status}`)));
    process.exit(1);
  },
);
