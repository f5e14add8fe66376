// One long poll per open page: /ops/changes answers once anything changed (or after 25 s).
// A page counting down to an expiry also reloads once a minute, so its "in N min" stays true.
(() => {
  const since = document.body.dataset.since;
  const ticking = document.body.dataset.ticking === "1";
  const loaded = Date.now();
  (async () => {
    for (;;) {
      try {
        const r = await fetch("/ops/changes?since=" + encodeURIComponent(since), {cache: "no-store"});
        const b = await r.json();
        if (b.changed || (ticking && Date.now() - loaded > 60000)) { location.reload(); return; }
      } catch (e) { await new Promise(ok => setTimeout(ok, 5000)); }
    }
  })();
})();
