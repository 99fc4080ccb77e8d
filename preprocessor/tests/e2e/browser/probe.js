// Injected at the top of <head> by the browser test (preprocessor/tests/e2e/browser.rs): picks
// the theme before mdBook's own script reads it, records console errors and failed loads, and
// after load measures every card, table, figure and code block against the content column. The
// report is appended to the page as JSON in <pre id="fkc-probe-report"> and posted to the frame
// page (frame.html), which shows the page at an exact width and copies the report for --dump-dom.
(function () {
  var THEME = "@THEME@";
  var errors = [];
  try { localStorage.setItem("mdbook-theme", THEME); } catch (e) { }
  var consoleError = console.error;
  console.error = function () {
    errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var target = e.target && (e.target.src || e.target.href);
    errors.push("error: " + (e.message || target || "unknown"));
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    errors.push("unhandled rejection: " + e.reason);
  });
  function describe(el) {
    var card = el.closest(".fkc-card");
    var where = card ? (card.id || card.className) : "page";
    return el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined && el.className ? "." + el.className.split(" ").join(".") : "") + " in " + where;
  }
  window.addEventListener("load", function () {
    setTimeout(function () {
      var html = document.documentElement;
      var main = document.querySelector("main");
      var m = main.getBoundingClientRect();
      var wide = [];
      var selector = "main .fkc-card, main table, main svg, main pre, main .fkc-figure-box, main img, main .table-wrapper";
      document.querySelectorAll(selector).forEach(function (el) {
        // mdBook wraps a Markdown table in .table-wrapper, a scroll container (overflow-x:
        // auto): the table inside is measured through its wrapper, which must fit and must not
        // scroll sideways either (a table a reader has to scroll does not read).
        if (el.tagName === "TABLE" && el.parentElement && el.parentElement.classList.contains("table-wrapper")) { return; }
        var r = el.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) { return; }
        if (r.left < m.left - 1 || r.right > m.right + 1) {
          wide.push(describe(el) + ": " + Math.round(r.left) + ".." + Math.round(r.right) +
            " outside the column " + Math.round(m.left) + ".." + Math.round(m.right));
        }
        // A code block of the book's own Markdown may scroll (mdBook's style); nothing the
        // preprocessor renders may: its diagnostics and sources wrap.
        var scroller = el.tagName === "PRE" && !el.closest(".fkc-card");
        if (!scroller && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
          wide.push(describe(el) + ": content " + el.scrollWidth + " px in " + el.clientWidth + " px");
        }
      });
      if (html.scrollWidth > window.innerWidth + 1) {
        wide.push("the page scrolls sideways: " + html.scrollWidth + " > " + window.innerWidth);
      }
      var report = {
        theme: html.className,
        width: window.innerWidth,
        column: Math.round(m.width),
        cards: document.querySelectorAll("main .fkc-card").length,
        contracts: document.querySelectorAll("main .fkc-contract").length,
        figures: document.querySelectorAll("main .fkc-example").length,
        drifts: document.querySelectorAll("main svg.fkc-drift").length,
        errors: errors,
        wide: wide
      };
      var pre = document.createElement("pre");
      pre.id = "fkc-probe-report";
      pre.textContent = JSON.stringify(report);
      document.body.appendChild(pre);
      if (window.parent !== window) { window.parent.postMessage(pre.textContent, "*"); }
    }, 200);
  });
})();
