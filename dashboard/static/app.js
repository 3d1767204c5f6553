// temporal-overseer dashboard: keeps the live part of a page up to date by
// polling its HTML fragment (rendered and escaped by the server). No build
// step: this file is embedded as is.
(function () {
  "use strict";
  var live = document.querySelector("[data-live]");
  if (!live) return;
  var url = live.getAttribute("data-live");
  var every = Math.max(1, parseInt(live.getAttribute("data-refresh"), 10) || 5) * 1000;
  var stamp = document.querySelector("[data-updated]");

  function pausedOf(root) {
    var s = root.querySelector("[data-paused]");
    return s ? s.getAttribute("data-paused") : null;
  }
  var paused = pausedOf(document);

  // The resume form is not part of the live fragment: when the job pauses
  // or resumes, reload the page to show or hide it, unless someone is
  // typing in it.
  function formBusy() {
    var f = document.querySelector("form.resume");
    if (!f) return false;
    if (f.contains(document.activeElement)) return true;
    var fields = f.querySelectorAll("input[type=text], textarea");
    for (var i = 0; i < fields.length; i++) if (fields[i].value !== "") return true;
    return false;
  }

  function tick() {
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        live.innerHTML = html;
        if (stamp) stamp.textContent = "updated " + new Date().toISOString().slice(11, 19) + " UTC";
        document.body.removeAttribute("data-stale");
        var now = pausedOf(live);
        if (paused !== null && now !== null && now !== paused && !formBusy()) {
          window.location.replace(window.location.pathname + window.location.search.replace(/([?&])done=[^&]*/, "$1").replace(/[?&]$/, ""));
          return;
        }
      })
      .catch(function () {
        document.body.setAttribute("data-stale", "true");
        if (stamp) stamp.textContent = "could not refresh; retrying";
      })
      .then(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
