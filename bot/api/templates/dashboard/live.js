// One long poll per open page: /ops/changes answers once anything changed (or after 25 s).
// A page counting down to an expiry also reloads once a minute, so its "in N min" stays true.
// Once a form on the page is submitted the page is leaving: a reload then would replace the
// post's own answer (a decision's page with its message) with a plain copy of this page. A
// submit a dialog called off (decide.js) is no leaving.
(() => {
  const since = document.body.dataset.since;
  const ticking = document.body.dataset.ticking === "1";
  const loaded = Date.now();
  let leaving = false;
  document.addEventListener("submit", (e) => { if (!e.defaultPrevented) leaving = true; });
  (async () => {
    for (;;) {
      try {
        const r = await fetch("/ops/changes?since=" + encodeURIComponent(since), {cache: "no-store"});
        const b = await r.json();
        if (leaving) return;
        if (b.changed || (ticking && Date.now() - loaded > 60000)) { location.reload(); return; }
      } catch (e) { await new Promise(ok => setTimeout(ok, 5000)); }
    }
  })();
})();
