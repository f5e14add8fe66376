// A Confirm is posted only after the browser's own dialog is accepted: one stray click (or a
// click a page laid a decoy under) confirms nothing. Dismissed, nothing is sent. Listened for
// on the document, first (capture): a panel refreshed in place (live.js) keeps its dialog,
// and live.js sees a called-off submit as called off.
(() => {
  document.addEventListener("submit", (event) => {
    const form = event.target.closest && event.target.closest("form.decide[data-ask]");
    if (form && !window.confirm(form.dataset.ask)) event.preventDefault();
  }, true);
})();
