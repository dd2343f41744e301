// The flipbook viewer: page-flip for the page turning, lazy page images, link areas, the email
// gate, and reader events posted to the collector in batches (sendBeacon when the page goes).
// The pages' text (text layer, search, announcements, reading mode) is viewer-text.js; zoom,
// thumbnails, share, download and print are viewer-tools.js.
(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("config").textContent);
  // The viewer's words in the reader's language (docs/VIEWER.md "Languages"): the page gives
  // them (#strings, from the catalogue in i18n.go); t fills the placeholders ({n}, {total}).
  var strings = {};
  try { strings = JSON.parse(document.getElementById("strings").textContent); } catch (e) {}
  function t(key, vars) {
    var s = strings[key] == null ? key : strings[key];
    return s.replace(/\{(\w+)\}/g, function (m, k) { return vars && vars[k] != null ? String(vars[k]) : m; });
  }
  var tokenKey = "flipbook-token-" + cfg.book_id;
  var token = null;
  try { token = localStorage.getItem(tokenKey); } catch (e) {}
  var session = (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random()).slice(0, 64);
  var embedded = window.self !== window.top;
  var sourceHost = "";
  if (embedded && document.referrer) { try { sourceHost = new URL(document.referrer).hostname; } catch (e) {} }

  // Events.
  var queue = [];
  function payload() {
    var p = { book_id: cfg.book_id, session_id: session, events: queue.splice(0, 500) };
    if (token) p.reader_token = token;
    if (cfg.tracked_link) p.tracked_link = cfg.tracked_link;
    if (sourceHost) p.source_host = sourceHost;
    return JSON.stringify(p);
  }
  function emit(ev) { ev.occurred_at = new Date().toISOString(); queue.push(ev); }
  function flush(beacon) {
    if (!queue.length) return;
    var body = payload();
    if (beacon && navigator.sendBeacon) { navigator.sendBeacon(cfg.collect_url, new Blob([body], { type: "text/plain" })); return; }
    fetch(cfg.collect_url, { method: "POST", headers: { "Content-Type": "application/json" }, body: body, keepalive: true }).catch(function () {});
  }
  setInterval(function () { flush(false); }, 3000);

  // Time on the current page(s), counted only while the page is visible.
  var current = [], since = 0;
  function startSegment(pages) { current = pages; since = document.visibilityState === "visible" ? Date.now() : 0; }
  function endSegment() {
    if (!since) return;
    var ms = Date.now() - since; since = 0;
    current.forEach(function (n) { if (n >= 1 && n <= cfg.pages.length) emit({ type: "page_segment_completed", page_number: n, active_ms: Math.round(ms / current.length) }); });
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { endSegment(); flush(true); } else { startSegment(current); }
  });
  window.addEventListener("pagehide", function () { endSegment(); emit({ type: "session_ended", exit_reason: "closed" }); flush(true); });

  // The book.
  var book = document.getElementById("book");
  var info = document.getElementById("pageinfo");
  var pageFlip = null, shown = [];
  // Right-to-left books (docs/VIEWER.md "Right-to-left books"): page-flip turns pages only one
  // way, so it is given the pages in reverse order, with a blank page before them when the book
  // has an odd number of pages (its pairs are then [3|2], [5|4] and the cover stands alone, as
  // in a bound right-to-left book). pageIndex and pageAt are the one mapping between a page
  // number (1-based, reading order) and page-flip's page index; everything that turns to a page
  // or names the pages on show goes through them (window.flipbook.pageIndex for the tools).
  var rtl = !!cfg.rtl;
  function flipCount() { return cfg.pages.length + (rtl && cfg.pages.length % 2 ? 1 : 0); }
  function pageIndex(n) { return rtl ? flipCount() - n : n - 1; }
  function pageAt(i) { return rtl ? flipCount() - i : i + 1; }
  // The page numbers page-flip shows at page index i, in reading order: a two-page spread in
  // landscape (after the cover), one page on the cover, the back cover and in portrait. The
  // blank back of an odd right-to-left book counts as its last page.
  function visiblePages(i) {
    var landscape = pageFlip && pageFlip.getOrientation && pageFlip.getOrientation() === "landscape";
    var pages = (landscape && i > 0 ? [i, i + 1] : [i]).map(pageAt)
      .filter(function (n) { return n >= 1 && n <= cfg.pages.length; }).sort(function (a, b) { return a - b; });
    return pages.length ? pages : [cfg.pages.length];
  }
  // flipPages are the page elements in page-flip's order.
  function flipPages() {
    var list = Array.prototype.slice.call(book.querySelectorAll(".page"));
    if (!rtl) return list;
    if (list.length % 2) {
      var blank = document.createElement("div");
      blank.className = "page blank"; blank.setAttribute("aria-hidden", "true");
      book.appendChild(blank); list.push(blank);
    }
    return list.reverse();
  }
  // forward and back turn in reading order; the arrow keys and the buttons turn toward their
  // side (the left one goes forward in a right-to-left book).
  function forward() { if (rtl) pageFlip.flipPrev(); else pageFlip.flipNext(); }
  function back() { if (rtl) pageFlip.flipNext(); else pageFlip.flipPrev(); }
  // Page images (docs/VIEWER.md "Page images"): a page's image is asked for when it is loaded:
  // the pages on show at once, their neighbours (two back, four ahead) only once the reader
  // turns, touches or keys, or after a pause, so a phone that shows one page downloads one page.
  // With renditions, the image has a srcset (WebP by width, then the page image) and sizes, the
  // width the page is shown at: the browser picks the smallest that is sharp on its screen.
  var neighbours = false;
  // shownWidth is the width to ask a page's image for, in CSS pixels: the width page-flip shows
  // a page at, times 2/devicePixelRatio on screens denser than 2 (a page fitted to a phone is
  // sharp at 2; zooming asks for more: viewer-tools.js sharpen).
  function shownWidth(div, p) {
    var r = pageFlip && pageFlip.getBoundsRect ? pageFlip.getBoundsRect() : null;
    return Math.ceil(((r && r.pageWidth) || div.getBoundingClientRect().width || p.width) * Math.min(1, 2 / (window.devicePixelRatio || 1)));
  }
  function loadPage(n) {
    var div = document.querySelector('.page[data-n="' + n + '"]'), p = cfg.pages[n - 1];
    var img = div && div.querySelector("img");
    if (!img || img.src) return;
    img.onerror = pageFailed;
    if (p.srcset) {
      var w = shownWidth(div, p);
      img.dataset.w = String(w); img.sizes = w + "px"; img.srcset = p.srcset;
    }
    img.src = p.url;
  }
  // pageFailed: a page image the service refused. If the book itself is no longer there for
  // this reader (unpublished, expired, the access list changed), the page is loaded again and the
  // service shows what it shows such a reader (the notice, or the gate); pages on show as broken
  // images said nothing (found by a review).
  var checkedBook = false;
  function pageFailed() {
    if (checkedBook) return;
    checkedBook = true;
    fetch(cfg.pages_url, { headers: token ? { "X-Reader-Token": token } : {} }).then(function (r) {
      if (r.status === 404 || r.status === 403) location.reload();
      else checkedBook = false;
    }).catch(function () { checkedBook = false; });
  }
  // A window made larger (a phone turned, a window widened) asks the loaded pages for images as
  // wide as they are now shown; never for smaller ones.
  var resizing = false;
  window.addEventListener("resize", function () {
    if (resizing) return;
    resizing = true;
    requestAnimationFrame(function () {
      resizing = false;
      Array.prototype.forEach.call(book.querySelectorAll(".page img[srcset]"), function (img) {
        var div = img.parentNode, w = shownWidth(div, cfg.pages[div.dataset.n - 1]);
        if (w > +img.dataset.w) { img.dataset.w = String(w); img.sizes = w + "px"; }
      });
    });
  });
  function loadAround(i) {
    visiblePages(i).forEach(loadPage);
    if (!neighbours) return;
    var at = visiblePages(i)[0] - 1; // in reading order (right-to-left books: page-flip's i runs backwards)
    for (var k = Math.max(0, at - 2); k < Math.min(cfg.pages.length, at + 5); k++) loadPage(k + 1);
  }
  function loadNeighbours() {
    if (neighbours || !pageFlip) return;
    neighbours = true;
    loadAround(pageFlip.getCurrentPageIndex());
    if (window.flipbook && window.flipbook.text) window.flipbook.text.prime(); // the text layers too
  }

  // The page in the URL fragment, #page=N (docs/VIEWER.md): N clamped to the book's pages, or 0
  // when the fragment is not of that form.
  function fragmentNumber() {
    var m = /^#page=(\d+)$/.exec(location.hash);
    return m ? parseInt(m[1], 10) : -1;
  }
  function fragmentPage() {
    var n = fragmentNumber();
    return n < 0 ? 0 : Math.min(Math.max(n, 1), cfg.pages.length);
  }
  // writeFragment names the first page on show in the fragment, unless it already names one of
  // them (a reader who opened #page=13 keeps it while pages 12-13 show). replaceState: turning
  // pages adds no history entries and fires no hashchange.
  function writeFragment(pages) {
    if (pages.indexOf(fragmentNumber()) >= 0) return;
    try { history.replaceState(history.state, "", "#page=" + pages[0]); } catch (e) {}
  }

  // Where readers click on a page, for the page heatmap (issue 29): the position in fractions
  // of the page as shown (zoom and turn transforms included), the zoom, at most maxClicks a
  // session. A drag is not a click (the tools swallow the click that ends one).
  var clicks = 0, maxClicks = 300;
  function pageClicked(div, n, e) {
    var r = div.getBoundingClientRect();
    if (clicks >= maxClicks || !r.width || !r.height) return;
    var x = (e.clientX - r.left) / r.width, y = (e.clientY - r.top) / r.height;
    if (!(x >= 0 && x <= 1 && y >= 0 && y <= 1)) return;
    var z = window.flipbook && window.flipbook.tools ? window.flipbook.tools.zoom() : 1;
    clicks++;
    emit({ type: "page_clicked", page_number: n, x: Math.round(x * 1e4) / 1e4, y: Math.round(y * 1e4) / 1e4,
      zoom: Math.min(10, Math.max(1, Math.round(z * 100) / 100)) });
  }

  function render() {
    var text = window.FlipbookText(cfg, function () { return token; }, t);
    cfg.pages.forEach(function (p, i) {
      var div = document.createElement("div");
      div.className = "page"; div.dataset.n = String(i + 1);
      var img = document.createElement("img");
      img.alt = t("page_n", { n: i + 1 }); img.decoding = "async";
      if (p.placeholder) img.style.backgroundImage = "url(" + p.placeholder + ")"; // until the image comes
      div.appendChild(img);
      text.decorate(div, p, i); // the text layer, over the image
      if (cfg.watermark) { // drawn on the page itself, so it turns with it
        var wm = document.createElement("span");
        wm.className = "wm"; wm.textContent = cfg.watermark; wm.setAttribute("aria-hidden", "true");
        div.appendChild(wm);
      }
      div.addEventListener("click", function (e) { pageClicked(div, i + 1, e); });
      (p.links || []).forEach(function (l) {
        var a = document.createElement("a");
        a.className = "link"; a.href = l.url; a.target = "_blank"; a.rel = "noopener";
        a.style.left = (l.x * 100) + "%"; a.style.top = (l.y * 100) + "%";
        a.style.width = (l.w * 100) + "%"; a.style.height = (l.h * 100) + "%";
        a.addEventListener("click", function () { emit({ type: "link_clicked", page_number: i + 1, url: l.url }); flush(false); });
        div.appendChild(a);
      });
      book.appendChild(div);
    });
    var first = cfg.pages[0] || { width: 600, height: 800 };
    var opened = fragmentPage() || 1;
    // size "stretch" without autoSize: the book fills #book, which the stylesheet sizes to the
    // space under the header, and page-flip fits the pages into it (whole pages, centred).
    pageFlip = new St.PageFlip(book, {
      width: first.width, height: first.height, size: "stretch", autoSize: false, minWidth: 100, maxWidth: 2000,
      minHeight: 100, maxHeight: 3000, maxShadowOpacity: 0.4, showCover: true, mobileScrollSupport: false,
      usePortrait: true, flippingTime: cfg.settings.animation_type === "flip" ? 700 : 300,
      useMouseEvents: true, disableFlipByClick: false, swipeDistance: 30, startPage: pageIndex(opened)
    });
    // Portrait (one page) when two pages side by side would be much smaller than one page on its
    // own: page-flip turns portrait when the book is narrower than twice minWidth, so minWidth is
    // set before page-flip's own resize handler runs (this one is added first).
    var ratio = first.width / first.height;
    function chooseOrientation() {
      var w = book.clientWidth, h = book.clientHeight;
      pageFlip.getSettings().minWidth = w / 2 < 0.7 * Math.min(w, h * ratio) ? w + 1 : 1;
    }
    chooseOrientation();
    window.addEventListener("resize", chooseOrientation);
    pageFlip.loadFromHTML(flipPages());
    text.attach(pageFlip);
    var tools = window.FlipbookTools(cfg, { pageFlip: pageFlip, token: function () { return token; }, text: text,
      emit: emit, flush: function () { flush(false); }, t: t });
    // show records what is on show: counter, fragment, images, and the reader's time. page-flip
    // also reports the pages on show again (on resize, say): that is not a new view.
    var before = []; // the pages on show before the last change
    function show(i) {
      var pages = visiblePages(i);
      if (pages.join() === shown.join()) return;
      var opening = !shown.length;
      endSegment();
      before = shown;
      shown = pages;
      startSegment(pages);
      info.textContent = (pages.length > 1 ? pages[0] + "\u2013" + pages[pages.length - 1] : pages[0]) + " / " + cfg.pages.length;
      loadAround(i);
      text.shown(pages);
      tools.shown(pages);
      if (!opening || fragmentPage()) writeFragment(pages); // a book opened without a fragment keeps its plain URL
    }
    pageFlip.on("flip", function (e) { loadNeighbours(); show(e.data); });
    // From a spread to one page, page-flip keeps its index, the spread's left page: in a
    // right-to-left book that is the later one, and a narrowed window skipped a page (found by a
    // review). The first page on show in reading order stays.
    pageFlip.on("changeOrientation", function (e) {
      // page-flip has shown its index already (show ran): the spread is the one before.
      var spread = before.indexOf(shown[0]) >= 0 ? before : shown;
      if (rtl && e.data === "portrait" && spread.length && spread[0] !== shown[0]) pageFlip.turnToPage(pageIndex(spread[0]));
    });
    show(pageFlip.getCurrentPageIndex());
    ["pointerdown", "keydown", "wheel"].forEach(function (ev) {
      document.addEventListener(ev, loadNeighbours, { capture: true, passive: true, once: true });
    });
    var pause = function () { setTimeout(loadNeighbours, 3000); };
    if (document.readyState === "complete") pause(); else window.addEventListener("load", pause);
    emit({ type: "session_started", page_number: opened });
    flush(false);
    // A reader who edits the fragment goes to that page.
    window.addEventListener("hashchange", function () {
      var n = fragmentPage();
      if (!n) return;
      if (shown.indexOf(n) >= 0) { writeFragment(shown); return; }
      pageFlip.turnToPage(pageIndex(n));
    });
    // The buttons turn from a zoomed page too (back to the whole page); keys do not (they pan).
    document.getElementById("prev").onclick = function () { tools.unzoom(); pageFlip.flipPrev(); };
    document.getElementById("next").onclick = function () { tools.unzoom(); pageFlip.flipNext(); };
    document.addEventListener("keydown", function (e) {
      if (text.keyOwned(e)) return; // typing, a focused button's Space or Enter, reading mode
      if (tools.key(e)) return; // zoom keys, panning while zoomed, the thumbnails, Escape
      if (e.key === "ArrowRight") { pageFlip.flipNext(); e.preventDefault(); }
      if (e.key === "ArrowLeft") { pageFlip.flipPrev(); e.preventDefault(); }
      if (e.key === "PageDown" || e.key === " ") { forward(); e.preventDefault(); }
      if (e.key === "PageUp") { back(); e.preventDefault(); }
      if (e.key === "Home") pageFlip.turnToPage(pageIndex(1));
      if (e.key === "End") pageFlip.turnToPage(pageIndex(cfg.pages.length));
    });
    if (rtl) { // the left button goes forward: the buttons' names change places
      var pb = document.getElementById("prev"), nb = document.getElementById("next"), pl = pb.getAttribute("aria-label");
      pb.setAttribute("aria-label", nb.getAttribute("aria-label")); nb.setAttribute("aria-label", pl);
    }
    window.flipbook = { pageFlip: pageFlip, flush: flush, queue: queue, session: session, text: text, tools: tools, pages: cfg.pages,
      rtl: rtl, pageIndex: pageIndex, pageAt: pageAt };
  }

  // Tools from the book's settings.
  // open_fullscreen_by_default: browsers allow full screen only from a gesture, so it is asked
  // for at the reader's first click, tap or key.
  if (cfg.open_fullscreen && document.documentElement.requestFullscreen) {
    var goFull = function () {
      ["pointerdown", "keydown"].forEach(function (t) { document.removeEventListener(t, goFull, true); });
      if (!document.fullscreenElement) document.documentElement.requestFullscreen().catch(function () {});
    };
    ["pointerdown", "keydown"].forEach(function (t) { document.addEventListener(t, goFull, true); });
  }
  if (!document.documentElement.requestFullscreen) document.getElementById("fullscreen").hidden = true; // none here
  if (cfg.settings.fullscreen_enabled && document.documentElement.requestFullscreen) {
    var fs = document.getElementById("fullscreen"); fs.hidden = false;
    fs.onclick = function () { document.fullscreenElement ? document.exitFullscreen() : document.documentElement.requestFullscreen(); };
  }

  // The email gate.
  var gate = document.getElementById("gate");
  function openBook() {
    gate.hidden = true;
    if (cfg.pages.length || !cfg.gated) { render(); return; }
    fetch(cfg.pages_url, { headers: { "X-Reader-Token": token } })
      .then(function (r) { if (!r.ok) throw new Error("gate"); return r.json(); })
      .then(function (b) { cfg.pages = b.data.pages; cfg.document_url = b.data.document_url; cfg.outline = b.data.outline; render(); })
      .catch(function () { try { localStorage.removeItem(tokenKey); } catch (e) {} token = null; gate.hidden = false; });
  }
  // The form is always handled (a stored token refused shows the gate again: without its
  // handler the browser submitted the form itself and the reader typed the address twice).
  if (cfg.gated) {
    gate.addEventListener("submit", function (e) {
      e.preventDefault();
      var email = document.getElementById("gate-email").value;
      fetch(cfg.access_url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ email: email, session_id: session }) })
        .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, status: r.status, body: b }; }); })
        .then(function (res) {
          if (!res.ok) {
            var er = document.getElementById("gate-error"); er.hidden = false;
            // The book's own refusal text for a refused address, else the viewer's words for
            // the refusal, an invalid address or too many attempts.
            var refused = res.status === 403 && cfg.gate_error_message;
            er.textContent = refused ? cfg.gate_error_message : t({ 403: "gate_denied", 422: "gate_invalid", 400: "gate_invalid", 429: "gate_too_many" }[res.status] || "gate_failed");
            return;
          }
          token = res.body.data.reader_token;
          try { localStorage.setItem(tokenKey, token); } catch (e) {}
          openBook();
        });
    });
  }
  if (cfg.gated && !token) gate.hidden = false;
  else openBook();
})();
