/* The rating page: keyboard-first, and the rubric's caps applied live.
 *
 * Reads the rubric rules from the JSON the page embeds (#rubric-data), the same data the
 * server validates with. Everything here is an aid: without it the form still posts and the
 * server applies the same rules. State is read from the DOM each time, so it keeps working
 * after htmx swaps in the next item.
 */
(function () {
  "use strict";

  var IGNORES = "ignores_hard_constraint";
  var PARTIAL = "partial_compliance";

  function rateForm() { return document.getElementById("rate-form"); }
  function rubricData() {
    var el = document.getElementById("rubric-data");
    return el ? JSON.parse(el.textContent) : null;
  }
  function rows(form) { return Array.prototype.slice.call(form.querySelectorAll(".kb-row")); }
  function radios(row) { return Array.prototype.slice.call(row.querySelectorAll("input[type=radio]")); }
  function inputs(row) { return Array.prototype.slice.call(row.querySelectorAll("input")); }

  function currentRow(form) {
    var active = document.activeElement;
    var row = active && active.closest ? active.closest(".kb-row") : null;
    if (row && form.contains(row)) return row;
    return form.querySelector(".kb-row.is-current") || rows(form)[0] || null;
  }

  function markCurrent(form, row) {
    rows(form).forEach(function (r) { r.classList.toggle("is-current", r === row); });
  }

  function focusRow(form, row, quiet) {
    if (!row) return;
    var all = row.dataset.kind === "flags" ? inputs(row) : radios(row);
    var target = all.find(function (i) { return i.checked && !i.disabled; }) ||
      all.find(function (i) { return !i.disabled; }) || all[0];
    // quiet: on page load, keep the item in view from its top (the prompt comes first).
    if (target) target.focus({ preventScroll: !!quiet });
    markCurrent(form, row);
    if (!quiet) row.scrollIntoView({ block: "nearest" });
  }

  function move(form, row, step) {
    var all = rows(form);
    var next = all[all.indexOf(row) + step];
    if (next) {
      focusRow(form, next);
    } else if (step > 0) {
      markCurrent(form, null);
      document.getElementById("submit-btn").focus();
    }
  }

  // ------------------------------------------------------------------ caps
  function checklistState(form) {
    var answers = Array.prototype.map.call(form.querySelectorAll(".constraint-row"), function (row) {
      var checked = row.querySelector("input:checked");
      return checked ? checked.value : null;
    });
    var met = answers.filter(function (a) { return a === "met"; }).length;
    var notMet = answers.filter(function (a) { return a === "not_met"; }).length;
    return { total: answers.length, met: met, notMet: notMet, complete: met + notMet === answers.length };
  }

  function activeFlags(form, data) {
    var flags = new Set();
    form.querySelectorAll("input[name=flags]:checked").forEach(function (i) { flags.add(i.value); });
    var state = checklistState(form);
    if (state.total) {
      data.checklist_flags.forEach(function (key) { flags.delete(key); });
      if (data.stored_checklist_flags && state.met + state.notMet === 0) {
        // An annotation stored without answers: its flags hold until the checklist is answered.
        data.stored_checklist_flags.forEach(function (key) { flags.add(key); });
      }
      var implied = null;
      if (state.met && state.notMet) implied = PARTIAL;  // the guideline's partial compliance
      else if (state.complete && state.met === 0) implied = IGNORES;
      if (implied && data.checklist_flags.indexOf(implied) >= 0) flags.add(implied);
    }
    return flags;
  }

  function allowedRange(data, dimension, flags) {
    var lo = data.scale[0], hi = data.scale[1], why = [];
    data.rules.forEach(function (rule) {
      if (rule.dimension === dimension && flags.has(rule.flag)) {
        lo = Math.max(lo, rule.min);
        hi = Math.min(hi, rule.max);
        why.push(data.flags[rule.flag]);
      }
    });
    return { lo: lo, hi: hi, why: why };
  }

  function applyCaps(form) {
    var data = rubricData();
    var clearedRows = [];
    if (!data) return clearedRows;
    var flags = activeFlags(form, data);
    form.querySelectorAll(".dim-row").forEach(function (row) {
      var range = allowedRange(data, row.dataset.dimension, flags);
      var cleared = false;
      radios(row).forEach(function (input) {
        var value = Number(input.value);
        var off = value < range.lo || value > range.hi;
        if (off && input.checked) { input.checked = false; cleared = true; }
        input.disabled = off;
        input.closest(".level").setAttribute("aria-disabled", off ? "true" : "false");
      });
      var note = row.querySelector(".cap-note");
      if (!range.why.length) {
        note.textContent = "";
      } else {
        var span = range.lo === range.hi ? "only " + range.lo : range.lo + "\u2013" + range.hi + " only";
        note.textContent = span + " (" + range.why.join(", ") + ")" + (cleared ? " \u00b7 choice cleared" : "");
      }
      if (cleared) { showLevel(row, null); clearedRows.push(row); }
    });
    var derived = document.getElementById("derived-flags");
    if (derived) {
      var state = checklistState(form);
      var explanation = data.rules.filter(function (r) {
        return data.checklist_flags.indexOf(r.flag) >= 0 && flags.has(r.flag);
      }).map(function (r) { return r.explanation; });
      if (explanation.length) derived.textContent = explanation.join(" ");
      else if (state.complete) derived.textContent = "All met: no cap on Instruction-Following.";
      else derived.textContent = "";
    }
    return clearedRows;
  }

  // ------------------------------------------------------------------ level descriptions
  function showLevel(row, level) {
    var text = row.querySelector(".level-text");
    if (!text) return;
    if (!level) {
      var checked = row.querySelector(".level input:checked");
      level = checked ? checked.closest(".level") : null;
    }
    if (level) {
      text.textContent = level.querySelector("input").value + " \u00b7 " + level.dataset.text;
    } else {
      text.textContent = text.dataset.default || "";
    }
  }

  // ------------------------------------------------------------------ actions
  var focusBeforeHelp = null;

  function toggleHelp(show) {
    var help = document.getElementById("help-dialog");
    if (!help) return;
    var open = show === undefined ? help.hidden : show;
    if (open === !help.hidden) return;
    help.hidden = !open;
    if (open) {
      focusBeforeHelp = document.activeElement;
      help.querySelector(".card").focus();
    } else if (focusBeforeHelp && document.contains(focusBeforeHelp)) {
      focusBeforeHelp.focus({ preventScroll: true });
    }
  }

  function helpOpen() {
    var help = document.getElementById("help-dialog");
    return help && !help.hidden;
  }

  function toggleFlag(form, key) {
    var box = form.querySelector('input[name=flags][data-key="' + key + '"]');
    if (!box) return false;
    box.checked = !box.checked;
    var cleared = applyCaps(form);  // what a click's change event does, keeping which scores it cleared
    // A flag that clears a chosen score sends the annotator back to that score.
    if (cleared.length) focusRow(form, cleared[0]);
    else focusRow(form, box.closest(".kb-row"));
    return true;
  }

  function openComment(form) {
    var box = form.querySelector(".comment-box");
    if (!box) return;
    box.open = true;
    document.getElementById("id_comment").focus();
  }

  // The rubric opens as a side sheet (a bottom sheet on narrow screens) over the score panel, so
  // the item being rated stays in view; the page does not scroll.
  function toggleRubric(form) {
    var drawer = document.getElementById("rubric-drawer");
    if (!drawer) return;
    if (drawer.open) { closeRubric(form); return; }
    drawer.classList.add("rubric-floating");
    drawer.open = true;
    drawer.querySelector("summary").focus({ preventScroll: true });
    // A bottom sheet (phones) may cover the item's start: bring the item up above it.
    var item = document.querySelector(".rate-item");
    var sheetTop = drawer.getBoundingClientRect().top;
    if (item && sheetTop > 0 && item.getBoundingClientRect().top > sheetTop - 96) {
      window.scrollBy(0, item.getBoundingClientRect().top - 8);
    }
  }

  function closeRubric(form) {
    var drawer = document.getElementById("rubric-drawer");
    if (!drawer || !drawer.open) return false;
    var floating = drawer.classList.contains("rubric-floating");
    drawer.open = false;
    drawer.classList.remove("rubric-floating");
    if (floating && form) focusRow(form, currentRow(form), true);
    return true;
  }

  function openSkip() {
    var box = document.getElementById("skip-box");
    if (!box) return;
    box.open = true;
    document.getElementById("skip-reason").focus();
  }

  function doSkip() {
    var reason = document.getElementById("skip-reason");
    if (!reason.value.trim()) {
      reason.placeholder = "Please say why you skip this item";
      reason.focus();
      return;
    }
    document.getElementById("skip-btn").click();
  }

  function onKey(event) {
    var form = rateForm();
    if (!form || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var typing = target.matches && target.matches("textarea, input[type=text], input:not([type])");
    if (event.key === "Escape") {
      if (helpOpen()) { toggleHelp(false); return; }
      var rubric = document.getElementById("rubric-drawer");
      if (rubric && rubric.classList.contains("rubric-floating") && closeRubric(form)) return;
      var box = document.getElementById("skip-box");
      if (box && box.open && typing) { box.open = false; focusRow(form, currentRow(form)); }
      if (target.id === "id_comment") focusRow(form, currentRow(form));
      return;
    }
    if (helpOpen()) {
      if (event.key === "?") { event.preventDefault(); toggleHelp(false); }
      if (event.key === "Tab") event.preventDefault();  // a modal dialog keeps the focus
      return;
    }
    if (typing) {
      if (event.key === "Enter" && target.id === "skip-reason") { event.preventDefault(); doSkip(); }
      return;
    }
    if (event.key === "?") { event.preventDefault(); toggleHelp(); return; }
    if (event.key === "Enter") {
      if (/^(BUTTON|A|SUMMARY)$/.test(target.tagName)) return;
      event.preventDefault();
      document.getElementById("submit-btn").click();
      return;
    }
    if (event.key === "s") { event.preventDefault(); openSkip(); return; }
    if (event.key === "r") { event.preventDefault(); toggleRubric(form); return; }
    if (event.key === "c") { event.preventDefault(); openComment(form); return; }
    if (/^[a-z]$/.test(event.key) && event.key !== "y" && event.key !== "n" && toggleFlag(form, event.key)) {
      event.preventDefault();
      return;
    }
    var row = currentRow(form);
    if (!row) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      move(form, row, event.key === "ArrowDown" ? 1 : -1);
      return;
    }
    var value = null;
    if (row.dataset.kind === "dimension" && /^[0-9]$/.test(event.key)) value = event.key;
    if (row.dataset.kind === "constraint" && (event.key === "y" || event.key === "n")) {
      value = event.key === "y" ? "met" : "not_met";
    }
    if (value === null) return;
    event.preventDefault();
    var input = row.querySelector('input[type=radio][value="' + value + '"]');
    if (!input) return;
    if (input.disabled) {  // refused: say so where the eye is, and stay on this row
      var note = row.querySelector(".cap-note");
      var refused = row.querySelector(".key-refused");
      if (!refused) {
        refused = document.createElement("span");
        refused.className = "key-refused";
        refused.setAttribute("role", "alert");
        (note || row).insertAdjacentElement(note ? "afterend" : "beforeend", refused);
      }
      refused.textContent = value + " is not allowed here" + (note && note.textContent ? ": " + note.textContent : "") +
        ". Press an allowed score.";
      return;
    }
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    move(form, row, 1);
  }

  function tick() {
    var timer = document.querySelector(".item-timer");
    if (!timer || !timer.dataset.since) return;
    var seconds = Math.max(0, Math.round((Date.now() - Date.parse(timer.dataset.since)) / 1000));
    var m = Math.floor(seconds / 60), s = seconds % 60;
    timer.textContent = m + ":" + (s < 10 ? "0" : "") + s;
  }

  // The session's end and the lease's, in the reader's own clock and one format. The session's end
  // (data-seconds) keeps its seconds: cut to the minute, "until 05:49" would name a time already past
  // when the page stops at 05:49:50.
  function localTimes() {
    document.querySelectorAll("time.local-time").forEach(function (el) {
      var at = new Date(el.getAttribute("datetime"));
      var parts = { hour: "2-digit", minute: "2-digit" };
      if (el.hasAttribute("data-seconds")) parts.second = "2-digit";
      if (!isNaN(at)) el.textContent = at.toLocaleTimeString([], parts);
    });
  }

  function init() {
    var form = rateForm();
    tick();
    localTimes();
    if (!form) return;
    applyCaps(form);
    form.querySelectorAll(".dim-row").forEach(function (row) { showLevel(row, null); });
    var all = rows(form).filter(function (row) { return row.dataset.kind !== "flags"; });
    var first = all.find(function (row) { return !row.querySelector("input:checked"); }) || all[0];
    focusRow(form, first, true);
    var summary = document.getElementById("error-summary");
    if (summary) summary.focus();  // announced first; the keys still act on the marked row
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("change", function (event) {
    var form = rateForm();
    if (!form || !form.contains(event.target)) return;
    applyCaps(form);
    var row = event.target.closest(".kb-row");
    if (row) {
      markCurrent(form, row);
      showLevel(row, null);
      var refused = row.querySelector(".key-refused");
      if (refused) refused.remove();
    }
  });
  document.addEventListener("focusin", function (event) {
    var form = rateForm();
    var row = event.target.closest ? event.target.closest(".kb-row") : null;
    if (form && row) markCurrent(form, row);
    var level = event.target.closest ? event.target.closest(".level") : null;
    if (level) showLevel(level.closest(".kb-row"), level);
  });
  // Focus leaving a row's levels takes their description with it: the row shows its chosen level's,
  // or its default when nothing is chosen, not the level that last had the focus.
  document.addEventListener("focusout", function (event) {
    var level = event.target.closest ? event.target.closest(".level") : null;
    if (!level) return;
    var row = level.closest(".kb-row");
    var next = event.relatedTarget;
    if (next && next.closest && next.closest(".level") && row.contains(next)) return;  // focusin shows it
    showLevel(row, null);
  });
  document.addEventListener("mouseover", function (event) {
    var level = event.target.closest ? event.target.closest(".level") : null;
    if (level) showLevel(level.closest(".kb-row"), level);
  });
  document.addEventListener("mouseout", function (event) {
    var level = event.target.closest ? event.target.closest(".level") : null;
    if (level) showLevel(level.closest(".kb-row"), null);
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-action]") : null;
    if (!button) return;
    if (button.dataset.action === "help") toggleHelp();
    if (button.dataset.action === "help-close") toggleHelp(false);
    if (button.dataset.action === "rubric") toggleRubric(rateForm());
  });
  document.addEventListener("toggle", function (event) {  // closed by its summary: back in the page
    if (event.target.id === "rubric-drawer" && !event.target.open) event.target.classList.remove("rubric-floating");
  }, true);
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("htmx:afterSettle", init);
})();
