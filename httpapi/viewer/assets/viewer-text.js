// The viewer's text (issue 28, docs/VIEWER.md "Text layer, search and reading mode"): a
// transparent text layer over each page image (selectable unless the book is copy-protected),
// the search panel with highlighted hits, the page-turn announcement for screen readers, and the
// reading mode of books with accessibility_enabled. viewer.js creates it with
// FlipbookText(cfg, token) and calls decorate, attach, shown and keyOwned.
(function () {
  "use strict";
  var SPAN = 20; // pages per GET /text call (the route's limit)

  // t(key, vars) is the viewer's words in the reader's language (viewer.js).
  window.FlipbookText = function (cfg, token, t) {
    var n = cfg.pages.length, base = "/view/" + encodeURIComponent(cfg.book_id);
    var copyable = !cfg.settings.copyright_enabled; // copyright_enabled: copy protection
    var texts = {}; // page number -> promise of {page, text, words}
    var layers = {}; // page number -> the page's text layer (.tl)
    var pageFlip = null, shownPages = [], reading = false, down = null;
    var $ = function (id) { return document.getElementById(id); };
    var announce = $("announce"), bookText = $("book-text");
    var measure = document.createElement("canvas").getContext("2d");
    measure.font = "100px sans-serif";

    function get(path) {
      var h = {}, tok = token();
      if (tok) h["X-Reader-Token"] = tok;
      return fetch(base + path, { headers: h }).then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (b) {
          // A search the service refuses (no word, over 8 words, too long) is the reader's to
          // change: said in their words, not as a status code.
          if (r.status === 422 && path.indexOf("/search?") === 0) throw new Error(t("search_refused"));
          if (!r.ok) throw new Error(t("service_error", { status: r.status }));
          return b;
        });
      });
    }
    // ensure fetches the text of pages lo..hi not asked for yet, in calls of at most SPAN pages,
    // and returns a promise of each page's text.
    function ensure(lo, hi) {
      lo = Math.max(1, lo); hi = Math.min(n, hi);
      for (var a = lo; a <= hi; a++) {
        if (texts[a]) continue;
        var b = a;
        while (b < hi && b - a + 1 < SPAN && !texts[b + 1]) b++;
        var call = get("/text?from=" + a + "&to=" + b).then(function (r) { return r.data; });
        for (var k = a; k <= b; k++) {
          texts[k] = call.then(pick(k));
          texts[k].catch(forget(k, texts[k]));
        }
        a = b;
      }
      var all = [];
      for (var p = lo; p <= hi; p++) all.push(texts[p]);
      return all;
    }
    function pick(k) { return function (pages) { return pages.filter(function (p) { return p.page === k; })[0] || { page: k, text: "", words: [] }; }; }
    function forget(k, pr) { return function () { if (texts[k] === pr) delete texts[k]; }; } // asked again next time
    function noop() {}

    // The page image is drawn with object-fit: contain in page-flip's page box, whose shape is
    // the first page's: the layer covers the image itself (percentages, so no resize handling).
    function decorate(div, p, i) {
      var first = cfg.pages[0], rb = first.width / first.height, rp = p.width / p.height;
      var tl = document.createElement("div"), w = 100, h = 100;
      if (rp > rb) h = 100 * rb / rp; else w = 100 * rp / rb;
      tl.className = "tl" + (copyable ? "" : " nocopy");
      tl.style.cssText = "left:" + (100 - w) / 2 + "%;top:" + (100 - h) / 2 + "%;width:" + w + "%;height:" + h + "%";
      div.setAttribute("role", "region");
      div.setAttribute("aria-label", t("page_n", { n: i + 1 }));
      div.appendChild(tl); // after the image, before the watermark and the link areas: under them
      layers[i + 1] = tl;
      if (copyable) tl.addEventListener("mousedown", selectStart);
    }
    // fill puts the page's words in its layer: a span per word at its box, its font size the
    // box's height (container query units of the layer) and stretched to the box's width. The
    // separators of the page's text follow each word (a space, or a line break), so a copied
    // selection and a screen reader get words, lines and blocks.
    function fill(pt) {
      var tl = layers[pt.page];
      if (!tl || tl.dataset.filled) return;
      tl.dataset.filled = "1";
      var p = cfg.pages[pt.page - 1], rp = p.width / p.height, text = pt.text || "", pos = 0;
      var frag = document.createDocumentFragment(), words = pt.words || [];
      words.forEach(function (w, k) {
        var at = text.indexOf(w.text, pos), sep = " ";
        if (at >= 0) {
          pos = at + w.text.length;
          var next = k + 1 < words.length ? text.indexOf(words[k + 1].text, pos) : -1;
          if (next > pos) sep = text.slice(pos, next);
        }
        var s = document.createElement("span"), lines = sep.split("\n").length - 1, next = words[k + 1];
        s.textContent = lines ? w.text : w.text + " ";
        // A word followed on its line by another is stretched, with its space, up to the next
        // word: the selection then runs on without gaps or overlaps.
        var to = w.w, width = measure.measureText(w.text).width;
        if (!lines && next && next.x > w.x + w.w && Math.abs(next.y - w.y) < w.h / 2) {
          to = next.x - w.x; width = measure.measureText(s.textContent).width;
        }
        var scale = width > 0 && w.h > 0 ? 100 * to * rp / (width * w.h) : 1;
        s.style.cssText = "left:" + w.x * 100 + "%;top:" + w.y * 100 + "%;font-size:" + w.h * 100 + "cqh;transform:scaleX(" + scale.toFixed(4) + ")";
        frag.appendChild(s);
        for (var l = 0; l < lines; l++) frag.appendChild(document.createElement("br"));
      });
      tl.insertBefore(frag, tl.firstChild);
      // The server's text of the opening pages (#book-text) would now be heard twice.
      if (bookText && words.length) bookText.inert = true;
    }

    // A drag that starts on a word selects text; page-flip does not see it (it would start a
    // turn and prevent the selection). A click on a word without a drag is handed back to
    // page-flip as a click on the page, so it turns the page as a click anywhere else does.
    function selectStart(e) {
      if (e.button !== 0 || e.target.tagName !== "SPAN") return;
      e.stopPropagation();
      down = { x: e.clientX, y: e.clientY, page: this.parentNode };
    }
    window.addEventListener("mouseup", function (e) {
      if (!down) return;
      var d = down; down = null;
      if (Math.abs(e.clientX - d.x) + Math.abs(e.clientY - d.y) > 4 || e.shiftKey) return; // a selection
      var at = { bubbles: true, cancelable: true, clientX: e.clientX, clientY: e.clientY, button: 0 };
      d.page.dispatchEvent(new MouseEvent("mousedown", at));
      window.dispatchEvent(new MouseEvent("mouseup", at));
    });
    if (!copyable) { // copy protection: no selection, no copy, no context menu on the pages
      $("reader").classList.add("nocopy");
      ["copy", "cut", "contextmenu", "dragstart"].forEach(function (type) {
        ["book-wrap", "reader"].forEach(function (id) { $(id).addEventListener(type, function (e) { e.preventDefault(); }); });
      });
    }

    // shown is called with the pages on show: their text and their neighbours', and the
    // announcement for screen readers. The text layers are fetched once the reader turns,
    // touches or keys, or after a pause (prime, from viewer.js): opening a book costs its page
    // images only, and until then screen readers have the opening pages' text in the page
    // (#book-text).
    var primed = false;
    function shown(pages) {
      shownPages = pages;
      announce.textContent = pages.length > 1 ? t("pages_of", { a: pages[0], b: pages[1], total: n }) : t("page_of", { n: pages[0], total: n });
      if (primed) ensure(pages[0] - 2, pages[pages.length - 1] + 3).forEach(function (pr) { pr.then(fill, noop); });
    }
    function prime() {
      if (primed) return;
      primed = true;
      if (shownPages.length) ensure(shownPages[0] - 2, shownPages[shownPages.length - 1] + 3).forEach(function (pr) { pr.then(fill, noop); });
    }

    // Search.
    var panel = $("search-panel"), opener = $("search-open"), form = $("search-form"), q = $("search-q");
    var status = $("search-status"), list = $("search-hits"), searched = "";
    function openSearch() {
      panel.hidden = false; opener.setAttribute("aria-expanded", "true");
      relayout(); q.focus(); q.select();
    }
    function closeSearch() {
      if (panel.hidden) return;
      panel.hidden = true; opener.setAttribute("aria-expanded", "false");
      relayout(); opener.focus();
    }
    opener.onclick = function () { panel.hidden ? openSearch() : closeSearch(); };
    $("search-close").onclick = closeSearch;
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var query = q.value.trim();
      if (!query || query === searched) return;
      searched = query; list.textContent = ""; status.textContent = t("searching");
      get("/search?q=" + encodeURIComponent(query)).then(function (r) {
        if (searched !== query) return;
        var total = r.meta.total;
        var says = !total ? "search_none" : total === 1 ? "search_one" : r.meta.truncated ? "search_many_cut" : "search_many";
        status.textContent = t(says, { n: total, q: query, shown: r.data.length });
        r.data.forEach(function (hit) {
          var li = document.createElement("li"), b = document.createElement("button");
          b.type = "button"; b.className = "hit";
          var pg = document.createElement("span"), sn = document.createElement("span");
          pg.className = "hit-page"; pg.textContent = t("page_n", { n: hit.page });
          sn.className = "hit-snippet"; sn.textContent = hit.snippet;
          b.appendChild(pg); b.appendChild(document.createTextNode(" ")); b.appendChild(sn);
          b.onclick = function () { goTo(hit, b); };
          li.appendChild(b); list.appendChild(li);
        });
      }, function (err) { if (searched === query) { searched = ""; status.textContent = err.message; } });
    });
    // Up and Down move between the hits.
    list.addEventListener("keydown", function (e) {
      if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
      var hits = Array.prototype.slice.call(list.querySelectorAll(".hit")), k = hits.indexOf(document.activeElement);
      if (k < 0) return;
      e.preventDefault();
      var to = hits[Math.min(hits.length - 1, Math.max(0, k + (e.key === "ArrowDown" ? 1 : -1)))];
      to.focus();
    });
    // goTo shows a hit: the page (turned to, or its section in reading mode) with the matched
    // words highlighted.
    function goTo(hit, b) {
      Array.prototype.forEach.call(list.querySelectorAll("[aria-current]"), function (e) { e.removeAttribute("aria-current"); });
      b.setAttribute("aria-current", "true");
      Array.prototype.forEach.call(document.querySelectorAll(".tl .hl"), function (e) { e.remove(); });
      var tl = layers[hit.page];
      if (!tl) return;
      hit.boxes.forEach(function (x) {
        var m = document.createElement("div");
        m.className = "hl";
        m.style.cssText = "left:" + x.x * 100 + "%;top:" + x.y * 100 + "%;width:" + x.w * 100 + "%;height:" + x.h * 100 + "%";
        tl.appendChild(m);
      });
      if (reading) { readAt(hit.page); return; }
      if (shownPages.indexOf(hit.page) < 0) pageFlip.turnToPage(window.flipbook.pageIndex(hit.page)); // page-flip's order (viewer.js)
      if (window.matchMedia("(max-width: 600px)").matches) closeSearch(); // the panel covers the book
    }

    // The book's area changed (the panel opened or closed, the reading mode ended): page-flip and
    // viewer.js fit the pages again on a resize.
    function relayout() { window.dispatchEvent(new Event("resize")); }

    // Reading mode (accessibility_enabled): the text as HTML, page by page, fetched as it comes
    // into view.
    var reader = $("reader"), readBtn = $("reading"), wrap = $("book-wrap"), built = false, observer = null;
    function buildReader() {
      built = true;
      var frag = document.createDocumentFragment();
      for (var k = 1; k <= n; k++) {
        var sec = document.createElement("section"), h = document.createElement("h2"), body = document.createElement("div");
        sec.className = "rp"; sec.dataset.n = String(k); sec.setAttribute("aria-labelledby", "rp-" + k);
        h.id = "rp-" + k; h.textContent = t("page_n", { n: k }); h.tabIndex = -1;
        body.className = "rp-body"; body.textContent = t("loading");
        sec.appendChild(h); sec.appendChild(body); frag.appendChild(sec);
      }
      reader.appendChild(frag);
      observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (en) {
          if (!en.isIntersecting) return;
          var k = +en.target.dataset.n, from = Math.floor((k - 1) / SPAN) * SPAN + 1;
          ensure(from, from + SPAN - 1).forEach(function (pr) { pr.then(writePage, noop); });
          texts[k].catch(function (err) { en.target.querySelector(".rp-body").textContent = err.message; });
        });
      }, { root: reader, rootMargin: "600px 0px" });
      Array.prototype.forEach.call(reader.querySelectorAll(".rp"), function (s) { observer.observe(s); });
    }
    // writePage writes a page's blocks (blank-line-separated, lines joined) as paragraphs.
    function writePage(pt) {
      var sec = reader.querySelector('.rp[data-n="' + pt.page + '"]');
      if (!sec || sec.dataset.done) return;
      sec.dataset.done = "1"; observer.unobserve(sec);
      var body = sec.querySelector(".rp-body");
      body.textContent = "";
      var blocks = (pt.text || "").split(/\n\s*\n/).map(function (b) { return b.replace(/\s*\n\s*/g, " ").trim(); }).filter(Boolean);
      if (!blocks.length) {
        var none = document.createElement("p");
        none.className = "rp-none"; none.textContent = t("no_text");
        body.appendChild(none);
        return;
      }
      blocks.forEach(function (b) { var p = document.createElement("p"); p.textContent = b; body.appendChild(p); });
    }
    function readAt(k) {
      var h = $("rp-" + k);
      if (h) { h.scrollIntoView({ block: "start" }); h.focus({ preventScroll: true }); }
    }
    function setReading(on) {
      reading = on;
      readBtn.setAttribute("aria-pressed", String(on));
      ["prev", "next", "pageinfo"].forEach(function (id) { $(id).hidden = on; });
      if (on) {
        if (!built) buildReader();
        wrap.hidden = true; reader.hidden = false;
        readAt(shownPages[0] || 1);
        announce.textContent = t("reading_on");
        return;
      }
      // Back to the flipbook, at the page read last (the first section still in view).
      var top = reader.getBoundingClientRect().top, at = shownPages[0] || 1;
      var secs = reader.querySelectorAll(".rp");
      for (var k = 0; k < secs.length; k++) {
        if (secs[k].getBoundingClientRect().bottom > top + 1) { at = +secs[k].dataset.n; break; }
      }
      reader.hidden = true; wrap.hidden = false;
      relayout();
      if (shownPages.indexOf(at) < 0) pageFlip.turnToPage(window.flipbook.pageIndex(at));
      readBtn.focus();
    }
    if (cfg.accessibility_enabled) {
      readBtn.hidden = false;
      readBtn.onclick = function () { setReading(!reading); };
    }
    opener.hidden = false;

    // Escape closes the search panel from anywhere.
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && !panel.hidden) { e.preventDefault(); closeSearch(); }
    });
    // keyOwned says whether a key is not for turning pages: typed in a field, in the search
    // panel, Space or Enter on a button or link, with a modifier, or in reading mode.
    function keyOwned(e) {
      var tg = e.target;
      if (reading || e.ctrlKey || e.metaKey || e.altKey) return true;
      if (tg.closest && tg.closest("input, textarea, select, [contenteditable], #search-panel")) return true;
      return (e.key === " " || e.key === "Enter") && tg.closest && !!tg.closest("button, a");
    }

    return {
      decorate: decorate,
      attach: function (pf) { pageFlip = pf; },
      shown: shown,
      prime: prime,
      keyOwned: keyOwned,
      isReading: function () { return reading; }
    };
  };
})();
