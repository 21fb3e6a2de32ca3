/* htmx requests that fail: the person sees what a full page would tell them, where they are.
 *
 * htmx does not swap an error answer (4xx/5xx) or report a lost connection, so without this a
 * failed Submit looks like nothing happened. The message is the server's own error page's
 * #error-message (503: what happened, nothing was lost, when to send again), rebuilt as text and
 * same-site links in a live region, focused. It goes where the form says its errors go
 * ([data-request-errors-here]: the rating form's error summary, below its progress), else beside
 * the control that sent the request. Nothing else on the page changes, so everything the person
 * typed or chose stays as it was.
 */
(function () {
  "use strict";

  var UNREACHABLE = {
    heading: "The server could not be reached",
    text: "Nothing was lost: what you entered is still here. Check your connection and send it again in a few seconds."
  };

  function hostFor(detail) {
    var elt = detail.elt;
    var form = elt && elt.closest ? elt.closest("form") : null;
    return form || detail.target || document.getElementById("main") || document.body;
  }

  function clear(host) {
    Array.prototype.forEach.call(host.querySelectorAll(".request-error"), function (old) { old.remove(); });
  }

  function sameSite(href) {
    return typeof href === "string" && href.charAt(0) === "/" && href.charAt(1) !== "/";
  }

  // Text and same-site links only: the answer is parsed, never inserted as HTML.
  function copyInline(from, to) {
    Array.prototype.forEach.call(from.childNodes, function (node) {
      if (node.nodeType === Node.TEXT_NODE) {
        to.appendChild(document.createTextNode(node.textContent));
      } else if (node.nodeType === Node.ELEMENT_NODE && node.tagName === "A" && sameSite(node.getAttribute("href"))) {
        var a = document.createElement("a");
        a.href = node.getAttribute("href");
        a.textContent = node.textContent;
        to.appendChild(a);
      } else if (node.nodeType === Node.ELEMENT_NODE) {
        to.appendChild(document.createTextNode(node.textContent));
      }
    });
  }

  function fromAnswer(xhr) {
    var doc = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var scope = doc.getElementById("error-message") || doc.body;
    var heading = scope ? scope.querySelector("h1, h2") : null;
    var paragraphs = scope ? Array.prototype.slice.call(scope.querySelectorAll("p")) : [];
    if (!heading && !paragraphs.length) {
      return { heading: "The server answered " + xhr.status + (xhr.statusText ? " " + xhr.statusText : ""),
               text: "Nothing was changed by this request; what you entered is still here. Try again." };
    }
    return { heading: heading ? heading.textContent.trim() : "", paragraphs: paragraphs };
  }

  function show(detail, message) {
    var host = hostFor(detail);
    clear(host);
    var box = document.createElement("div");
    box.className = "request-error message error";
    box.setAttribute("role", "alert");
    if (message.heading) {
      var h = document.createElement("p");
      var strong = document.createElement("strong");
      strong.textContent = message.heading;
      h.appendChild(strong);
      box.appendChild(h);
    }
    (message.paragraphs || []).forEach(function (p) {
      var copy = document.createElement("p");
      copyInline(p, copy);
      box.appendChild(copy);
    });
    if (message.text) {
      var t = document.createElement("p");
      t.textContent = message.text;
      box.appendChild(t);
    }
    var here = host.querySelector("[data-request-errors-here]");
    if (here) here.parentNode.insertBefore(box, here);
    else host.appendChild(box);
    // Focused, so a screen reader reads it and the page scrolls to it from the Submit button below.
    box.tabIndex = -1;
    box.focus();
    if (box.scrollIntoView) box.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("htmx:beforeRequest", function (event) { clear(hostFor(event.detail)); });
  document.addEventListener("htmx:responseError", function (event) { show(event.detail, fromAnswer(event.detail.xhr)); });
  document.addEventListener("htmx:sendError", function (event) { show(event.detail, UNREACHABLE); });
  document.addEventListener("htmx:timeout", function (event) { show(event.detail, UNREACHABLE); });
})();
