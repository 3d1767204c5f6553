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
  // typing in it. On the Waiting page the rows are inside the batch form:
  // they are not refreshed while gates are selected or a note is typed.
  function formBusy() {
    var forms = document.querySelectorAll("form.resume, form.batch");
    for (var k = 0; k < forms.length; k++) {
      var f = forms[k];
      if (f.contains(document.activeElement) && document.activeElement !== document.body) return true;
      var fields = f.querySelectorAll("input[type=text], textarea");
      for (var i = 0; i < fields.length; i++) if (fields[i].value !== "") return true;
      if (f.querySelector("input[type=checkbox]:checked")) return true;
    }
    return false;
  }
  var hold = live.hasAttribute("data-hold-when-busy");

  function tick() {
    if (hold && formBusy()) {
      setTimeout(tick, every);
      return;
    }
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        // Signed out (the session expired): reload, which signs in again.
        if (r.status === 401 && !formBusy()) window.location.reload();
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
