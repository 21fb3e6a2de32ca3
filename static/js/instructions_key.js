// The instructions are one key away on every item: "i" opens or closes the drawer (outside text fields).
(function () {
  "use strict";
  function toggle(event) {
    var drawer = document.getElementById("instructions-drawer");
    if (!drawer) return;
    if (event) event.preventDefault();
    drawer.open = !drawer.open;
    if (drawer.open) drawer.scrollIntoView({ block: "start" });
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "i" || event.ctrlKey || event.metaKey || event.altKey) return;
    var t = event.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && t.type !== "radio" && t.type !== "checkbox")) return;
    toggle(event);
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest('[data-action="instructions"]');
    if (link && document.getElementById("instructions-drawer")) toggle(event);
  });
})();
