// The study's session countdown on the rating page. The server sends the seconds left with each
// page or swapped item; counting from when that arrived keeps a wrong computer clock out of it.
(function () {
  "use strict";
  var LOW = 120; // seconds: the strip turns to a warning
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function shown(left) {
    var h = Math.floor(left / 3600), m = Math.floor(left / 60) % 60, s = left % 60;
    return (h ? h + ":" + pad(m) : String(m)) + ":" + pad(s);
  }
  function tick() {
    var timer = document.getElementById("session-timer");
    if (!timer) return;
    if (!timer.dataset.endsAt) {
      timer.dataset.endsAt = String(Date.now() + 1000 * Number(timer.dataset.secondsLeft || 0));
    }
    // Rounded up like the server's figure: zero here means the deadline has passed there too.
    var left = Math.max(0, Math.ceil((Number(timer.dataset.endsAt) - Date.now()) / 1000));
    timer.textContent = shown(left);
    var strip = document.getElementById("session-left");
    if (strip) strip.classList.toggle("is-low", left <= LOW);
    if (left === 0 && !timer.dataset.over) {
      timer.dataset.over = "1";
      var notice = document.getElementById("session-over");
      if (notice) {
        notice.hidden = false;
        // Where the worker is looking: rate.css keeps it at the top of the view as they scroll (on a
        // phone they are down at Submit). The focus has a screen reader read it at once, and puts
        // Finish next in the Tab order; a layout that scrolled it away anyway brings it back.
        notice.focus({ preventScroll: true });
        var box = notice.getBoundingClientRect();
        if (box.top < 0 || box.bottom > window.innerHeight) notice.scrollIntoView({ block: "nearest" });
      }
      // Once the time is up its notice stands alone: a "Saved your rating." from before is stale.
      document.querySelectorAll("#main .messages").forEach(function (list) { list.remove(); });
      // Neither a rating nor a skip can be saved any more: both buttons say so.
      ["submit-btn", "skip-btn"].forEach(function (id) {
        var button = document.getElementById(id);
        if (button) {
          button.disabled = true;
          button.title = "The session's time is up: this item can no longer be saved.";
        }
      });
    }
  }
  tick();
  setInterval(tick, 1000);
  document.addEventListener("htmx:afterSettle", tick);
})();
