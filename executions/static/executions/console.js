// Live view: while the execution runs, ask the API for events after the last one seen;
// when there are new ones, fetch the page's live fragment (graph, timeline, nodes) again.
(function () {
  "use strict";
  var PERIOD_MS = 1500;
  function current() { return document.getElementById("wf-live"); }
  function poll() {
    var root = current();
    if (!root || root.dataset.terminal === "true") { return; }
    var url = root.dataset.eventsUrl + "?limit=1&after_seq=" + encodeURIComponent(root.dataset.lastSeq);
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : { results: [] }; })
      .then(function (body) {
        if (!body.results || !body.results.length) { return null; }
        return fetch(root.dataset.liveUrl, { credentials: "same-origin" }).then(function (r) {
          return r.ok ? r.text() : null;
        });
      })
      .then(function (html) {
        if (html) { current().outerHTML = html; }
      })
      .catch(function () { /* a failed poll is retried at the next tick */ })
      .then(function () { window.setTimeout(poll, PERIOD_MS); });
  }
  window.setTimeout(poll, PERIOD_MS);
})();
