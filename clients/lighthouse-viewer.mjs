// Lighthouse (npm lighthouse, pinned in package.json) on a published book's viewer page, with the
// mobile profile (Lighthouse's default configuration: a 412-px phone, simulated slow 4G and a 4x
// slower CPU) and the desktop profile (core/config/desktop-config.js), both with Lighthouse's
// default simulated throttling. Prints one JSON document on stdout: a compact summary of every
// run (category scores, the audits issue 29 names, the failing audits of accessibility, best
// practices and SEO, the network requests and their bytes, and the bytes of the requests started
// by the time the first spread was painted). It judges nothing: the targets are
// checked by httpapi/viewer_lighthouse_test.go (make test), docs/VIEWER.md "Lighthouse in make
// test". By hand:
//
//   VIEWER_URL=http://127.0.0.1:8080/view/… CHROME_PATH=/usr/bin/chromium node lighthouse-viewer.mjs
//
// LH_RUNS (default 1) runs each profile up to that many times, stopping early once a run's
// performance reaches LH_MIN_PERFORMANCE (0-100; unset: every run): timing wobbles on a busy
// machine, bytes do not. LH_PROFILES (default "mobile,desktop") picks the profiles; LH_REPORT_DIR,
// when set, receives each run's HTML report (lighthouse-<profile>-<run>.html). One headless
// Chromium (CHROME_PATH: never a downloaded browser) serves every run; Lighthouse clears the
// origin's cache and storage before each.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';
import desktopConfig from 'lighthouse/core/config/desktop-config.js';

const url = process.env.VIEWER_URL;
const chromePath = process.env.CHROME_PATH;
if (!url || !chromePath) {
  console.error('VIEWER_URL and CHROME_PATH must be set');
  process.exit(2);
}
const runs = Number(process.env.LH_RUNS || 1);
const minPerformance = process.env.LH_MIN_PERFORMANCE ? Number(process.env.LH_MIN_PERFORMANCE) : Infinity;
const profiles = (process.env.LH_PROFILES || 'mobile,desktop').split(',');
const reportDir = process.env.LH_REPORT_DIR;

// The audits issue 29 names (each must pass), and the metrics behind the performance score.
const named = ['uses-text-compression', 'uses-long-cache-ttl', 'modern-image-formats', 'uses-responsive-images',
  'errors-in-console', 'meta-description'];
const metrics = ['first-contentful-paint', 'largest-contentful-paint', 'total-blocking-time', 'cumulative-layout-shift',
  'speed-index'];
const judged = ['accessibility', 'best-practices', 'seo'];
const unscored = new Set(['informative', 'notApplicable', 'manual']);

const pct = (c) => (c && c.score !== null ? Math.round(c.score * 100) : null);

// audit is the compact form of one audit's result.
function audit(a) {
  if (!a) return { missing: true };
  const d = a.details || {};
  const out = { score: a.score, mode: a.scoreDisplayMode };
  if (a.displayValue) out.display = a.displayValue;
  if (a.numericValue !== undefined) out.value = Math.round(a.numericValue * 1000) / 1000;
  if (d.overallSavingsBytes) out.savingsBytes = Math.round(d.overallSavingsBytes);
  if (d.overallSavingsMs) out.savingsMs = Math.round(d.overallSavingsMs);
  if (a.errorMessage) out.error = a.errorMessage;
  return out;
}

// summary reads a run's report (the LHR).
function summary(profile, run, lhr, seconds) {
  const A = lhr.audits;
  const s = {
    profile, run, seconds, lighthouse: lhr.lighthouseVersion, userAgent: lhr.environment.hostUserAgent,
    finalUrl: lhr.finalDisplayedUrl, runtimeError: lhr.runtimeError ? lhr.runtimeError.message : undefined,
    warnings: lhr.runWarnings, scores: {}, metrics: {}, audits: {}, failing: [],
  };
  for (const [id, c] of Object.entries(lhr.categories)) s.scores[id] = pct(c);
  for (const id of metrics) s.metrics[id] = audit(A[id]);
  for (const id of named) s.audits[id] = audit(A[id]);
  for (const cat of judged) {
    for (const ref of (lhr.categories[cat] || { auditRefs: [] }).auditRefs) {
      const a = A[ref.id];
      const failed = a.scoreDisplayMode === 'error' || (a.score !== null && a.score < 1 && !unscored.has(a.scoreDisplayMode));
      if (failed) s.failing.push({ category: cat, id: a.id, score: a.score, title: a.title, display: a.displayValue });
    }
  }
  const items = (A['network-requests'] && A['network-requests'].details && A['network-requests'].details.items) || [];
  const origin = new URL(url).origin;
  // The first spread is on show at the largest contentful paint as the browser saw it (the
  // page image is the largest element): the requests started by then are what showing it took.
  // Request times count from the page's own request, LCP from the navigation: a few ms apart.
  const observed = (A.metrics && A.metrics.details && A.metrics.details.items && A.metrics.details.items[0]) || {};
  const lcp = observed.observedLargestContentfulPaint;
  s.firstSpreadMs = lcp === undefined ? null : Math.round(lcp);
  s.traceEndMs = observed.observedTraceEnd === undefined ? null : Math.round(observed.observedTraceEnd);
  s.requests = items.map((i) => ({
    start: Math.round(i.rendererStartTime), beforeFirstSpread: lcp !== undefined && i.rendererStartTime <= lcp,
    type: i.resourceType, status: i.statusCode, transfer: i.transferSize || 0, size: i.resourceSize || 0,
    url: i.url.startsWith(origin) ? i.url.slice(origin.length) : i.url.startsWith('data:') ? i.url.split(/[;,]/)[0] + ' (inline)' : i.url,
  }));
  s.transferBytes = s.requests.reduce((t, r) => t + r.transfer, 0);
  s.firstSpreadBytes = lcp === undefined ? null : s.requests.reduce((t, r) => t + (r.beforeFirstSpread ? r.transfer : 0), 0);
  s.totalByteWeight = A['total-byte-weight'] ? A['total-byte-weight'].numericValue : null;
  return s;
}

const chrome = await chromeLauncher.launch({
  chromePath,
  chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic'],
  logLevel: 'silent',
});
const out = { runs: [] };
try {
  if (reportDir) {
    // The reports of an earlier run with more runs would otherwise stay beside this run's.
    mkdirSync(reportDir, { recursive: true });
    for (const f of readdirSync(reportDir)) if (/^lighthouse-\w+-\d+\.html$/.test(f)) rmSync(join(reportDir, f));
  }
  for (const profile of profiles) {
    const config = profile === 'desktop' ? desktopConfig : undefined;
    for (let run = 1; run <= runs; run++) {
      const t0 = Date.now();
      const flags = { port: chrome.port, logLevel: 'error', output: 'html' };
      const result = await lighthouse(url, flags, config);
      const s = summary(profile, run, result.lhr, Math.round((Date.now() - t0) / 100) / 10);
      if (reportDir) writeFileSync(join(reportDir, `lighthouse-${profile}-${run}.html`), result.report);
      console.error(`lighthouse ${profile} run ${run}: performance ${s.scores.performance}, ${s.seconds} s`);
      out.runs.push(s);
      if (s.scores.performance !== null && s.scores.performance >= minPerformance) break;
    }
  }
} finally {
  await chrome.kill();
}
process.stdout.write(JSON.stringify(out) + '\n');
