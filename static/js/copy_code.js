// A "Copy" button (the completion code, a new study link): shown only where the clipboard can be written.
(function () {
  "use strict";
  if (!navigator.clipboard) return;
  document.querySelectorAll("button.copy-code").forEach(function (button) {
    var code = document.getElementById(button.dataset.copy);
    var state = button.parentElement.querySelector(".copy-state");
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(code.textContent.trim()).then(function () {
        if (state) state.textContent = "Copied.";
      }, function () {
        // Without permission: select the code so Ctrl+C (or Cmd+C) copies it.
        var range = document.createRange();
        range.selectNodeContents(code);
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
        if (state) state.textContent = "Selected: press Ctrl+C (Cmd+C on a Mac) to copy.";
      });
    });
  });
})();
