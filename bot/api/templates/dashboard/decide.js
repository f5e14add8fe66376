// A Confirm is posted only after the browser's own dialog is accepted: one stray click (or a
// click a page laid a decoy under) confirms nothing. Dismissed, nothing is sent.
(() => {
  for (const form of document.querySelectorAll("form.decide[data-ask]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.ask)) event.preventDefault();
    });
  }
})();
