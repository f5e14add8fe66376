// One long poll per open page: /ops/changes answers once anything changed (or after 25 s).
// A page counting down to an expiry also refreshes once a minute, so its "in N min" stays true.
// A page with sections marked data-live (an operation's) refreshes them in place: it fetches
// itself and swaps each section for its fresh copy, except one holding a form being typed in
// (text in a field, or the focus): a reason being written is never wiped. Other pages reload.
// Once a form on the page is submitted the page is leaving: a refresh then would replace the
// post's own answer with a plain copy of this page. A submit a dialog called off (decide.js,
// which listens first) is no leaving.
(() => {
  let since = document.body.dataset.since;
  const ticking = document.body.dataset.ticking === "1";
  const inPlace = document.querySelector("[data-live]") !== null;
  let loaded = Date.now();
  let leaving = false;
  document.addEventListener("submit", (e) => { if (!e.defaultPrevented) leaving = true; });
  const typing = (el) => {
    const fields = [...el.querySelectorAll("input[type=text], textarea")];
    const focused = document.activeElement;
    return fields.some((f) => f.value !== "") || (focused !== document.body && el.contains(focused));
  };
  const refresh = async () => {
    const r = await fetch(location.href, {cache: "no-store", credentials: "same-origin"});
    const doc = new DOMParser().parseFromString(await r.text(), "text/html");
    const fresh = [...doc.querySelectorAll("[data-live]")];
    const busy = [...document.querySelectorAll("[data-live]")].some(typing);
    if (!r.ok || fresh.length === 0) { if (!busy) location.reload(); return; }
    let prev = null;
    for (const section of fresh) {
      const old = document.getElementById(section.id);
      const adopted = document.adoptNode(section);
      if (old && typing(old)) { prev = old; continue; }
      if (old) old.replaceWith(adopted);
      else if (prev) prev.after(adopted);
      else document.querySelector("main").prepend(adopted);
      prev = adopted;
    }
    const kept = new Set(fresh.map((s) => s.id));
    for (const old of document.querySelectorAll("[data-live]")) {
      if (!kept.has(old.id) && !typing(old)) old.remove();
    }
    since = doc.body.dataset.since;
    document.body.dataset.since = since;
    document.title = doc.title;
    loaded = Date.now();
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || "0") + 1);
  };
  (async () => {
    for (;;) {
      try {
        const r = await fetch("/ops/changes?since=" + encodeURIComponent(since), {cache: "no-store"});
        const b = await r.json();
        if (leaving) return;
        if (b.changed || (ticking && Date.now() - loaded > 60000)) {
          if (!inPlace) { location.reload(); return; }
          await refresh();
          if (leaving) return;
        }
      } catch (e) { await new Promise(ok => setTimeout(ok, 5000)); }
    }
  })();
})();
