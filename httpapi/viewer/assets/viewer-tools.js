// The reader's tools (issue 29, docs/VIEWER.md "Zoom, thumbnails, share, download and print"):
// zoom (buttons, keys, double-click or double-tap, pinch, Ctrl+wheel) with panning, the page
// thumbnails, share, download of the PDF or of the pages on show, and print of the pages on show.
// viewer.js creates it with FlipbookTools(cfg, o) once page-flip runs and calls shown, key and
// unzoom.
(function () {
  "use strict";
  var CLICK_WAIT = 300; // ms within which a second press makes a double-click
  var TAP_MOVE = 12;    // px a tap may move
  var MAX_ZOOM = 3;     // times the fitted size, at most
  var SHARP = 1.5;      // times the page image's natural size, at most

  // o: pageFlip, token() (a gated book's reader token), emit and flush (reader events), text
  // (viewer-text.js: keyOwned, isReading), t(key, vars) (the viewer's words, viewer.js).
  window.FlipbookTools = function (cfg, o) {
    var t = o.t;
    var $ = function (id) { return document.getElementById(id); };
    var pageFlip = o.pageFlip, book = $("book"), wrap = $("book-wrap"), announce = $("announce");
    var shownPages = [], noop = function () {};
    var Z = { s: 1, tx: 0, ty: 0, g: null, max: 1 };

    // Zoom is a CSS transform of the book (#book, transform-origin 0 0): the pages, their text
    // layers, highlights and link areas are inside it and scale with it, so they stay aligned.
    // Panning keeps the pages over the whole of the book's area (or centred when smaller).
    function zoomed() { return Z.s > 1.001; }
    // geometry measures, at scale 1, the book's box, the area it is seen in (#book-wrap, which
    // clips it) and the pages on show; and the zoom at which a page image is shown at SHARP
    // times its natural size (MAX_ZOOM at most).
    function geometry() {
      var items = Array.prototype.filter.call(book.querySelectorAll(".stf__item"), function (e) {
        return e.offsetWidth > 0 && getComputedStyle(e).display !== "none";
      });
      if (!items.length) return null;
      var B = book.getBoundingClientRect(), V = wrap.getBoundingClientRect();
      var l = Infinity, t = Infinity, r = -Infinity, b = -Infinity, fit = 0;
      items.forEach(function (e) {
        var R = e.getBoundingClientRect();
        l = Math.min(l, R.left); t = Math.min(t, R.top); r = Math.max(r, R.right); b = Math.max(b, R.bottom);
        var n = +e.dataset.n, img = e.querySelector("img"), p = cfg.pages[n - 1] || {};
        // The page's largest image (the srcset's last), whichever the screen loaded so far.
        var nw = p.width || (img && img.naturalWidth) || R.width, nh = p.height || (img && img.naturalHeight) || R.height;
        fit = Math.max(fit, Math.min(R.width / nw, R.height / nh)); // CSS px per image px at scale 1
      });
      Z.max = Math.max(1, Math.min(MAX_ZOOM, SHARP / fit));
      return { bx: B.left, by: B.top, px: l - B.left, py: t - B.top, pw: r - l, ph: b - t,
        vx: V.left - B.left, vy: V.top - B.top, vw: V.width, vh: V.height };
    }
    function axis(t, v, vw, p, pw, s) {
      if (s * pw <= vw) return v + (vw - s * pw) / 2 - s * p; // smaller than the view: centred
      return Math.min(v - s * p, Math.max(v + vw - s * (p + pw), t));
    }
    function apply() {
      var g = Z.g;
      if (g) {
        Z.tx = axis(Z.tx, g.vx, g.vw, g.px, g.pw, Z.s);
        Z.ty = axis(Z.ty, g.vy, g.vh, g.py, g.ph, Z.s);
      }
      var on = zoomed();
      book.style.transformOrigin = "0 0";
      book.style.transform = on ? "translate(" + Z.tx + "px," + Z.ty + "px) scale(" + Z.s + ")" : "";
      wrap.classList.toggle("zoomed", on);
      sharpen();
      var pct = Math.round(Z.s * 100) + "%";
      $("zoom-out").disabled = !on;
      $("zoom-in").disabled = on && Z.s >= Z.max - 0.001;
      var rs = $("zoom-reset");
      rs.disabled = !on; rs.textContent = pct; rs.setAttribute("aria-label", t("zoom_reset", { pct: pct }));
    }
    // sharpen asks the pages on show for images as wide as they are shown zoomed: their srcset
    // (viewer.js) then loads a larger rendition, up to the page image itself; never a smaller one.
    function sharpen() {
      shownPages.forEach(function (n) {
        var img = book.querySelector('.page[data-n="' + n + '"] img'), w = img && Math.ceil(+img.dataset.w * Z.s);
        if (w && w > parseFloat(img.sizes)) img.sizes = w + "px";
      });
    }
    // zoomTo sets the scale s (1 to the maximum), keeping the point (cx, cy) of the screen (the
    // middle of the book's area by default) where it is.
    function zoomTo(s, cx, cy) {
      if (!Z.g) {
        if (s <= 1.001 || o.text.isReading()) return;
        Z.tx = Z.ty = 0; Z.s = 1;
        if (!(Z.g = geometry())) return;
        if (Z.max <= 1.001) {
          // The page is shown as large as its image already (no upscale): nothing to zoom to,
          // and the button says so (it stayed enabled and did nothing: found by a review).
          Z.g = null;
          $("zoom-in").disabled = true;
          return;
        }
      }
      var g = Z.g;
      s = Math.min(Math.max(s, 1), Z.max);
      if (cx == null) { cx = g.bx + g.vx + g.vw / 2; cy = g.by + g.vy + g.vh / 2; }
      var qx = (cx - g.bx - Z.tx) / Z.s, qy = (cy - g.by - Z.ty) / Z.s;
      Z.tx = cx - g.bx - s * qx; Z.ty = cy - g.by - s * qy; Z.s = s;
      if (!zoomed()) { unzoom(); return; }
      apply();
      say(t("zoom_level", { pct: Math.round(s * 100) + "%" }));
    }
    function unzoom() {
      var was = zoomed();
      Z.s = 1; Z.tx = Z.ty = 0; Z.g = null;
      apply();
      if (was) say(t("zoom_level", { pct: "100%" }));
    }
    function panBy(dx, dy) { if (zoomed()) { Z.tx += dx; Z.ty += dy; apply(); } }
    function toggleAt(x, y) { if (zoomed()) unzoom(); else zoomTo(2, x, y); }
    function say(s) { if (announce) announce.textContent = s; }
    $("zoom-in").onclick = function () { zoomTo(Z.s * 1.5); };
    $("zoom-out").onclick = function () { zoomTo(Z.s / 1.5); };
    $("zoom-reset").onclick = unzoom;
    window.addEventListener("resize", function () { if (zoomed()) unzoom(); }); // the layout moved

    // Ctrl+wheel (and a trackpad's pinch, which browsers send as one) zooms at the pointer; the
    // wheel alone pans while zoomed.
    wrap.addEventListener("wheel", function (e) {
      if (o.text.isReading()) return;
      var unit = e.deltaMode === 1 ? 30 : e.deltaMode === 2 ? 300 : 1, dy = e.deltaY * unit;
      if (e.ctrlKey) {
        e.preventDefault();
        // A mouse wheel's notch (about 100) is a step of 1.25; a trackpad's pinch is continuous.
        var f = Math.abs(dy) >= 50 ? (dy < 0 ? 1.25 : 0.8) : Math.exp(-dy / 100);
        zoomTo(Z.s * f, e.clientX, e.clientY);
      } else if (zoomed()) {
        e.preventDefault();
        panBy(-e.deltaX * unit, -dy);
      }
    }, { passive: false });

    // Pointers: one pans while zoomed (mouse, pen or finger), two fingers pinch. page-flip does
    // not see the presses while zoomed or pinching (capture listeners on window stop them).
    var ptrs = {}, gest = null, dragged = false, tap = null;
    function ptrList() { return Object.keys(ptrs).map(function (k) { return ptrs[k]; }); }
    function pinchState() {
      var p = ptrList(), a = p[0], b = p[1];
      return { d: Math.max(1, Math.hypot(a.x - b.x, a.y - b.y)), x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
    }
    wrap.addEventListener("pointerdown", function (e) {
      if (o.text.isReading() || (e.pointerType === "mouse" && e.button !== 0)) return;
      ptrs[e.pointerId] = { x: e.clientX, y: e.clientY, t: Date.now(), x0: e.clientX, y0: e.clientY };
      var n = ptrList().length;
      if (n === 2 && e.pointerType === "touch") {
        stopFlip();
        if (!Z.g) { Z.s = 1; Z.tx = Z.ty = 0; Z.g = geometry(); }
        if (!Z.g) return;
        var st = pinchState();
        gest = { pinch: true, d0: st.d, s0: Z.s, qx: (st.x - Z.g.bx - Z.tx) / Z.s, qy: (st.y - Z.g.by - Z.ty) / Z.s };
        tap = null;
      } else if (n === 1 && zoomed()) {
        gest = { pinch: false, x: e.clientX, y: e.clientY, tx: Z.tx, ty: Z.ty };
        dragged = false;
      }
    });
    window.addEventListener("pointermove", function (e) {
      var p = ptrs[e.pointerId];
      if (!p) return;
      p.x = e.clientX; p.y = e.clientY;
      if (!gest) return;
      if (gest.pinch && ptrList().length >= 2) {
        var st = pinchState(), s = Math.min(Math.max(gest.s0 * st.d / gest.d0, 1), Z.max);
        Z.s = s; Z.tx = st.x - Z.g.bx - s * gest.qx; Z.ty = st.y - Z.g.by - s * gest.qy;
        apply();
      } else if (!gest.pinch) {
        if (Math.abs(e.clientX - gest.x) + Math.abs(e.clientY - gest.y) > 4) dragged = true;
        Z.tx = gest.tx + e.clientX - gest.x; Z.ty = gest.ty + e.clientY - gest.y;
        apply();
      }
    });
    function pointerEnd(e) {
      var p = ptrs[e.pointerId];
      if (!p) return;
      delete ptrs[e.pointerId];
      var left = ptrList().length;
      if (gest && gest.pinch) {
        if (left === 0) { gest = null; if (Z.s < 1.02) unzoom(); else say(t("zoom_level", { pct: Math.round(Z.s * 100) + "%" })); }
        return;
      }
      gest = null;
      // A double tap (two short taps close together) toggles the zoom at the point.
      if (e.type !== "pointerup" || e.pointerType !== "touch" || left) return;
      var quick = Date.now() - p.t < 300 && Math.abs(p.x - p.x0) + Math.abs(p.y - p.y0) < TAP_MOVE;
      if (!quick) { tap = null; return; }
      if (tap && Date.now() - tap.t < CLICK_WAIT + 100 && Math.abs(tap.x - p.x) + Math.abs(tap.y - p.y) < 3 * TAP_MOVE) {
        tap = null;
        toggleAt(p.x, p.y);
        return;
      }
      tap = { t: Date.now(), x: p.x, y: p.y };
    }
    window.addEventListener("pointerup", pointerEnd);
    window.addEventListener("pointercancel", pointerEnd);

    // stopFlip makes page-flip forget a press it has seen (a finger that became a pinch, the
    // first click of a double-click): no turn and no fold follow it.
    function stopFlip() {
      var ui = pageFlip.getUI && pageFlip.getUI();
      if (ui) ui.touchPoint = null;
      pageFlip.userStop({ x: 0, y: 0 }, true);
    }
    function inBook(e) { return wrap.contains(e.target) && !(e.target.closest && e.target.closest("a, button")); }
    // Touch: while zoomed or with two fingers, page-flip sees no touches (no swipe, no fold), and
    // the browser does not scroll or zoom the page.
    ["touchstart", "touchmove", "touchend"].forEach(function (type) {
      window.addEventListener(type, function (e) {
        if (!wrap.contains(e.target) || o.text.isReading()) return;
        if (zoomed() || e.touches.length >= 2 || (gest && gest.pinch)) {
          e.stopPropagation();
          if (type !== "touchend" && e.cancelable) e.preventDefault();
        }
      }, { capture: true, passive: false });
    });
    // Mouse: a click on a page turns it (page-flip), but a double-click zooms; so page-flip gets
    // a click only once no second press came within CLICK_WAIT (it is replayed then). While
    // zoomed page-flip sees no presses or moves (dragging pans), and a click that ends a pan
    // does not follow a link.
    var last = null, pending = 0, swallowUp = false, replaying = false;
    window.addEventListener("mousedown", function (e) {
      if (replaying || !e.isTrusted || e.button !== 0 || !inBook(e) || o.text.isReading()) return;
      var now = Date.now();
      if (last && now - last.t < CLICK_WAIT && Math.abs(e.clientX - last.x) + Math.abs(e.clientY - last.y) < 10) {
        clearTimeout(pending); pending = 0; last = null; swallowUp = true;
        e.stopPropagation(); e.preventDefault();
        stopFlip();
        // The text layer saw the first press on a word and waits for its release: a release
        // with Shift (a selection, to it) ends that without a click.
        replaying = true;
        try { window.dispatchEvent(new MouseEvent("mouseup", { clientX: e.clientX, clientY: e.clientY, shiftKey: true, view: window })); } finally { replaying = false; }
        toggleAt(e.clientX, e.clientY);
        return;
      }
      last = { t: now, x: e.clientX, y: e.clientY, target: e.target };
      if (zoomed()) { e.stopPropagation(); e.preventDefault(); }
    }, true);
    window.addEventListener("mousemove", function (e) {
      if (zoomed() && wrap.contains(e.target)) e.stopPropagation(); // no page corners shown
    }, true);
    window.addEventListener("mouseup", function (e) {
      if (replaying || !e.isTrusted || e.button !== 0) return;
      if (swallowUp) { swallowUp = false; e.stopPropagation(); return; }
      if (!last || zoomed() || Math.abs(e.clientX - last.x) + Math.abs(e.clientY - last.y) > 4) return;
      var down = last;
      e.stopPropagation();
      stopFlip();
      pending = setTimeout(function () {
        pending = 0;
        if (last === down) last = null;
        replay(down.target, e.clientX, e.clientY);
      }, Math.max(0, CLICK_WAIT - (Date.now() - down.t)));
    }, true);
    function replay(target, x, y) {
      var at = { bubbles: true, cancelable: true, clientX: x, clientY: y, button: 0, view: window };
      replaying = true;
      try {
        (target.isConnected ? target : document.elementFromPoint(x, y) || book).dispatchEvent(new MouseEvent("mousedown", at));
        window.dispatchEvent(new MouseEvent("mouseup", at));
      } finally { replaying = false; }
    }
    window.addEventListener("click", function (e) {
      if (dragged && wrap.contains(e.target)) { dragged = false; e.preventDefault(); e.stopPropagation(); }
    }, true);

    // Thumbnails: every page, lazy-loaded images, a button each.
    var tPanel = $("thumbs-panel"), tOpen = $("thumbs-open"), tList = $("thumbs-list"), tBuilt = false;
    // The table of contents (the PDF's outline, issue 29) heads the panel: an entry a button,
    // indented by its depth, turning to its page.
    function buildToc() {
      var items = cfg.outline || [], list = $("toc-list");
      if (!items.length) return;
      items.forEach(function (it) {
        var li = document.createElement("li"), b = document.createElement("button"), pg = document.createElement("span");
        b.type = "button"; b.className = "toc-entry"; b.style.paddingLeft = (0.5 + 1.2 * Math.min(it.level, 6)) + "em";
        b.appendChild(document.createTextNode(it.title));
        pg.className = "toc-page"; pg.textContent = String(it.page);
        b.appendChild(pg);
        b.setAttribute("aria-label", t("toc_entry", { title: it.title, n: it.page }));
        b.onclick = function () { closeThumbs(); goTo(it.page); };
        li.appendChild(b); list.appendChild(li);
      });
      $("toc").hidden = false;
    }
    function buildThumbs() {
      tBuilt = true;
      buildToc();
      var frag = document.createDocumentFragment();
      cfg.pages.forEach(function (p, i) {
        var li = document.createElement("li"), b = document.createElement("button"), img = document.createElement("img");
        var num = document.createElement("span");
        b.type = "button"; b.className = "thumb"; b.dataset.n = String(i + 1);
        b.setAttribute("aria-label", t("page_n", { n: i + 1 }));
        img.loading = "lazy"; img.decoding = "async"; img.alt = "";
        img.width = 120; img.height = Math.round(120 * (p.height || 4) / (p.width || 3));
        if (p.srcset) { img.sizes = "120px"; img.srcset = p.srcset; } // the smallest rendition
        img.src = p.url;
        num.className = "thumb-n"; num.textContent = String(i + 1); num.setAttribute("aria-hidden", "true");
        b.appendChild(img); b.appendChild(num);
        b.onclick = function () { closeThumbs(); goTo(i + 1); };
        li.appendChild(b); frag.appendChild(li);
      });
      tList.appendChild(frag);
    }
    function markThumbs() {
      if (!tBuilt) return;
      Array.prototype.forEach.call(tList.querySelectorAll(".thumb"), function (b) {
        if (shownPages.indexOf(+b.dataset.n) >= 0) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
      });
    }
    function openThumbs() {
      closeMenu();
      if (!tBuilt) buildThumbs();
      markThumbs();
      tPanel.hidden = false; tOpen.setAttribute("aria-expanded", "true");
      var cur = tList.querySelector('.thumb[aria-current]') || tList.querySelector(".thumb");
      if (cur) { cur.scrollIntoView({ block: "center" }); cur.focus({ preventScroll: true }); }
    }
    function closeThumbs(focus) {
      if (tPanel.hidden) return;
      tPanel.hidden = true; tOpen.setAttribute("aria-expanded", "false");
      if (focus) tOpen.focus();
    }
    tOpen.onclick = function () { tPanel.hidden ? openThumbs() : closeThumbs(true); };
    $("thumbs-close").onclick = function () { closeThumbs(true); };
    // Arrow keys move in the grid (Up and Down by a row), Home and End to the first and last.
    function thumbKey(e) {
      var all = Array.prototype.slice.call(tList.querySelectorAll(".thumb")), k = all.indexOf(document.activeElement);
      if (k < 0) return false;
      var cols = 1;
      while (cols < all.length && all[cols].offsetTop === all[0].offsetTop) cols++;
      var to = { ArrowRight: k + 1, ArrowLeft: k - 1, ArrowDown: k + cols, ArrowUp: k - cols, Home: 0, End: all.length - 1 }[e.key];
      if (to == null) return false;
      all[Math.min(all.length - 1, Math.max(0, to))].focus();
      return true;
    }
    function goTo(n) {
      unzoom();
      if (shownPages.indexOf(n) < 0) pageFlip.turnToPage(window.flipbook.pageIndex(n)); // page-flip's order (viewer.js)
    }

    // Share (share_social_media): the page's link with #page=N, by the Web Share API where
    // there is one, else copied to the clipboard with a visible "Link copied".
    var toast = $("toast"), toastTimer = 0;
    function showToast(s) {
      toast.textContent = s;
      clearTimeout(toastTimer);
      toastTimer = setTimeout(function () { toast.textContent = ""; }, 4000);
    }
    // The link names the page of the fragment when it is on show (#page=13 while 12–13 show),
    // else the first page on show; without the query (a tracked link's ?tl= is the reader's).
    function pageLink() {
      var m = /^#page=(\d+)$/.exec(location.hash), n = m ? +m[1] : 0;
      return location.origin + location.pathname + "#page=" + (shownPages.indexOf(n) >= 0 ? n : shownPages[0] || 1);
    }
    function copyText(s) {
      var legacy = function () {
        var ta = document.createElement("textarea");
        ta.value = s; ta.setAttribute("readonly", ""); ta.style.cssText = "position:fixed;top:0;left:0;opacity:0";
        document.body.appendChild(ta); ta.select();
        var ok = false;
        try { ok = document.execCommand("copy"); } catch (e) {}
        ta.remove();
        return ok ? Promise.resolve() : Promise.reject(new Error("copy"));
      };
      if (navigator.clipboard && navigator.clipboard.writeText) return navigator.clipboard.writeText(s).catch(legacy);
      return legacy();
    }
    if (cfg.settings.share_social_media) {
      var sh = $("share");
      sh.hidden = false;
      sh.onclick = function () {
        var url = pageLink();
        if (navigator.share) { navigator.share({ title: document.title, url: url }).catch(noop); return; }
        copyText(url).then(function () { showToast(t("link_copied")); }, function () { showToast(t("copy_link", { url: url })); });
      };
    }

    // Download (downloadable_pdf): the whole PDF (full), the pages on show (spread), or one page
    // (single; with two pages on show, a menu of the two). GET /view/{id}/download cuts them.
    var dl = $("download"), menu = $("download-menu"), mode = cfg.download_mode || "", choices = [];
    function dlURL(range) {
      var u = "/view/" + encodeURIComponent(cfg.book_id) + "/download", q = [], tok = o.token();
      if (range) q.push("pages=" + range);
      if (tok) q.push("token=" + encodeURIComponent(tok));
      return u + (q.length ? "?" + q.join("&") : "");
    }
    function downloaded(n) {
      var ev = { type: "document_downloaded" };
      if (n) ev.page_number = n;
      o.emit(ev); o.flush();
    }
    function updateDownload() {
      if (!mode) return;
      var p = shownPages;
      if (mode === "full") choices = [{ url: dlURL(""), label: t("download_pdf") }];
      else if (mode === "spread" || p.length < 2) {
        var two = mode === "spread" && p.length > 1;
        choices = [{ url: dlURL(two ? p[0] + "-" + p[1] : String(p[0])), n: p[0],
          label: two ? t("download_pages", { a: p[0], b: p[1] }) : t("download_page", { n: p[0] }) }];
      } else {
        choices = p.map(function (n) { return { url: dlURL(String(n)), n: n, label: t("download_page", { n: n }), text: t("page_n", { n: n }) }; });
      }
      dl.hidden = false;
      dl.href = choices[0].url; dl.setAttribute("download", "");
      dl.setAttribute("aria-label", choices.length > 1 ? t("download_choose") : choices[0].label);
      if (choices.length > 1) { dl.setAttribute("aria-expanded", String(!menu.hidden)); dl.setAttribute("aria-controls", "download-menu"); }
      else { dl.removeAttribute("aria-expanded"); dl.removeAttribute("aria-controls"); closeMenu(); }
    }
    dl.addEventListener("click", function (e) {
      if (choices.length < 2) { downloaded(choices[0] && choices[0].n); return; }
      e.preventDefault();
      if (!menu.hidden) { closeMenu(true); return; }
      menu.textContent = "";
      choices.forEach(function (c) {
        var a = document.createElement("a");
        a.href = c.url; a.setAttribute("download", ""); a.textContent = c.text; a.setAttribute("aria-label", c.label);
        a.onclick = function () { downloaded(c.n); closeMenu(true); };
        menu.appendChild(a);
      });
      var r = dl.getBoundingClientRect();
      menu.style.top = r.bottom + 4 + "px"; menu.style.right = Math.max(4, innerWidth - r.right) + "px";
      menu.hidden = false; dl.setAttribute("aria-expanded", "true");
      menu.querySelector("a").focus();
    });
    function closeMenu(focus) {
      if (menu.hidden) return;
      menu.hidden = true;
      if (dl.hasAttribute("aria-expanded")) dl.setAttribute("aria-expanded", "false");
      if (focus) dl.focus();
    }
    document.addEventListener("click", function (e) {
      if (!menu.hidden && !menu.contains(e.target) && e.target !== dl) closeMenu(false);
    });

    // Print: the pages on show, each on its own sheet (#print-area, the only thing the print
    // stylesheet shows). Not offered when the book is copy-protected (copyright_enabled); the
    // browser's own Print then prints a notice.
    var area = $("print-area"), pr = $("print"), filling = false;
    function fillPrint() {
      area.textContent = "";
      if (cfg.settings.copyright_enabled) { area.textContent = t("print_off"); return []; }
      return shownPages.map(function (n) {
        var img = document.createElement("img");
        img.src = cfg.pages[n - 1].url; img.alt = t("page_n", { n: n });
        area.appendChild(img);
        return img;
      });
    }
    window.addEventListener("beforeprint", function () { if (!filling) fillPrint(); });
    window.addEventListener("afterprint", function () { area.textContent = ""; });
    if (!cfg.settings.copyright_enabled) {
      pr.hidden = false;
      pr.onclick = function () {
        filling = true;
        var imgs = fillPrint();
        Promise.all(imgs.map(function (i) { return i.decode ? i.decode().catch(noop) : null; })).then(function () {
          try { window.print(); } finally { filling = false; }
        });
      };
    }

    // The reading mode (viewer-text.js) has no pages to zoom, thumbnail or print.
    var tools = ["zoom-out", "zoom-reset", "zoom-in", "thumbs-open", "print"], printable = !pr.hidden;
    tools.forEach(function (id) { $(id).classList.add("page-tool"); });
    $("reading").addEventListener("click", function () {
      var r = o.text.isReading();
      unzoom(); closeThumbs(false);
      tools.forEach(function (id) { $(id).hidden = r || (id === "print" && !printable); });
    });
    tools.slice(0, 4).forEach(function (id) { $(id).hidden = false; });
    apply();

    // key handles the keys of the tools; true when the key was theirs (viewer.js then does not
    // turn the page): in the thumbnails, Escape (menu, thumbnails, zoom), + = - 0 for zoom, and
    // while zoomed the arrows pan and the other page keys do nothing.
    function key(e) {
      if (e.defaultPrevented) return true;
      if (e.key === "Escape") {
        if (!menu.hidden) closeMenu(true);
        else if (!tPanel.hidden) closeThumbs(true);
        else if (zoomed()) unzoom();
        else return false;
        e.preventDefault();
        return true;
      }
      if (menu.contains(e.target)) return e.key !== "Tab";
      if (!tPanel.hidden && tPanel.contains(e.target)) {
        if (thumbKey(e)) e.preventDefault();
        return true;
      }
      if (o.text.isReading()) return false;
      var step = { "+": 1.5, "=": 1.5, "-": 1 / 1.5, "_": 1 / 1.5 }[e.key];
      if (step) { zoomTo(Z.s * step); e.preventDefault(); return true; }
      if (e.key === "0") { unzoom(); e.preventDefault(); return true; }
      if (!zoomed()) return false;
      var d = Math.round(Z.g ? Z.g.vw * 0.15 : 80);
      var pan = { ArrowLeft: [d, 0], ArrowRight: [-d, 0], ArrowUp: [0, d], ArrowDown: [0, -d] }[e.key];
      if (pan) { panBy(pan[0], pan[1]); e.preventDefault(); return true; }
      if (["PageUp", "PageDown", " ", "Home", "End"].indexOf(e.key) >= 0) { e.preventDefault(); return true; }
      return false;
    }

    return {
      // shown is called with the pages on show after each turn.
      shown: function (pages) {
        if (pages.join() !== shownPages.join()) unzoom();
        shownPages = pages;
        markThumbs();
        updateDownload();
      },
      key: key,
      unzoom: unzoom,
      zoom: function () { return Z.s; },
      goTo: goTo
    };
  };
})();
