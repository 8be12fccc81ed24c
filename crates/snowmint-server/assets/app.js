// snowmint explorer: makes the server-rendered page live. The server renders
// every result (the page works without this script); here we fetch the same
// page for the current input and swap the result and the inline errors in.
// IDs are only ever strings or BigInt here, never a Number.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const body = document.body;
  // The layout's numbers, from the server (which takes them from the core).
  const EPOCH = BigInt(body.dataset.epoch);
  const TIMESTAMP_SHIFT = BigInt(body.dataset.timestampShift);
  const MAX_SEQUENCE = BigInt(body.dataset.maxSequence);
  const MAX_COUNT = Number(body.dataset.maxCount);
  let generation = 0;
  let timer = null;

  for (const el of document.querySelectorAll("#now, #copy, #auto-label, .js-only")) el.hidden = false;

  function query(form) {
    const params = new URLSearchParams();
    const data = new FormData(form);
    // The picker only matters when no timestamp is typed: keep URLs short.
    if ((data.get("timestamp") || "").trim() !== "") data.delete("at");
    for (const [k, v] of data) {
      if (v !== "") params.append(k, v);
    }
    return params.toString();
  }

  // Fetches /?query and replaces the result, the errors and the language link.
  async function update(form) {
    const qs = query(form);
    const mine = ++generation;
    let html;
    try {
      const res = await fetch("/?" + qs, { headers: { Accept: "text/html" } });
      html = await res.text();
    } catch (e) {
      return; // offline: keep what is shown
    }
    if (mine !== generation) return; // a newer request is on its way
    const doc = new DOMParser().parseFromString(html, "text/html");
    $("result").innerHTML = doc.getElementById("result").innerHTML;
    for (const err of form.querySelectorAll(".error")) {
      const fresh = doc.getElementById(err.id);
      if (!fresh) continue;
      err.textContent = fresh.textContent;
      err.hidden = fresh.hidden;
      const input = $(err.id.replace(/-error$/, ""));
      if (input) {
        if (fresh.hidden) input.removeAttribute("aria-invalid");
        else input.setAttribute("aria-invalid", "true");
      }
    }
    const other = form.id === "compose-form" ? $("decode-form") : $("compose-form");
    for (const err of other.querySelectorAll(".error")) {
      err.hidden = true;
      const input = $(err.id.replace(/-error$/, ""));
      if (input) input.removeAttribute("aria-invalid");
    }
    $("lang-switch").href = doc.getElementById("lang-switch").getAttribute("href");
    history.replaceState(null, "", qs ? "/?" + qs : "/");
    bindCopy();
  }

  function schedule(form) {
    clearTimeout(timer);
    timer = setTimeout(() => update(form), 120);
  }

  for (const form of [$("compose-form"), $("decode-form")]) {
    form.addEventListener("input", () => schedule(form));
    form.addEventListener("change", () => schedule(form));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      clearTimeout(timer);
      update(form);
    });
  }

  $("now").addEventListener("click", () => {
    $("timestamp").value = String(Date.now());
    $("at").value = "";
    update($("compose-form"));
  });

  // Keeps the picker showing the typed timestamp (UTC).
  $("timestamp").addEventListener("input", () => {
    const v = $("timestamp").value.trim();
    if (/^\d{13}$/.test(v)) {
      const d = new Date(Number(v));
      if (!isNaN(d)) $("at").value = d.toISOString().slice(0, 23);
    }
  });

  $("at").addEventListener("change", () => {
    const v = $("at").value;
    if (!v) return;
    const ms = Date.parse(v + "Z"); // the picker is labelled UTC
    if (Number.isFinite(ms)) {
      $("timestamp").value = String(ms);
    }
  });

  function bindCopy() {
    const button = $("copy");
    if (!button) return;
    button.hidden = false;
    button.addEventListener("click", async () => {
      const id = button.dataset.id; // a string: exact at any size
      try {
        await navigator.clipboard.writeText(id);
      } catch (e) {
        const range = document.createRange();
        range.selectNodeContents($("id-value"));
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        document.execCommand && document.execCommand("copy");
      }
      $("copy-status").textContent = body.dataset.copied;
    });
  }
  bindCopy();

  // Live mode: POST /api/v1/ids and list the IDs, decoded with BigInt.
  const list = $("live-list");
  async function mint(count) {
    const err = $("count-error");
    try {
      const res = await fetch("/api/v1/ids?count=" + encodeURIComponent(count), { method: "POST" });
      const data = await res.json();
      if (!res.ok) {
        err.textContent = data.error || body.dataset.liveFailed;
        err.hidden = false;
        $("count").setAttribute("aria-invalid", "true");
        return;
      }
      err.hidden = true;
      $("count").removeAttribute("aria-invalid");
      const items = data.ids.slice(-50).reverse().map((id) => {
        const big = BigInt(id);
        const ms = (big >> TIMESTAMP_SHIFT) + EPOCH;
        const seq = big & MAX_SEQUENCE;
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = "/?id=" + id;
        a.textContent = id;
        const meta = document.createElement("span");
        meta.className = "meta";
        meta.textContent = new Date(Number(ms)).toISOString() + " · " + body.dataset.liveSeq + " " + seq;
        li.append(a, meta);
        return li;
      });
      list.prepend(...items);
      while (list.children.length > 100) list.lastElementChild.remove();
    } catch (e) {
      err.textContent = body.dataset.liveFailed;
      err.hidden = false;
    }
  }
  $("live-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const count = $("count").value.trim() || "1";
    // Checked here too so the message is in the page's language.
    if (!/^\d{1,9}$/.test(count) || Number(count) < 1 || Number(count) > MAX_COUNT) {
      const err = $("count-error");
      err.textContent = body.dataset.countError + " " + JSON.stringify(count.slice(0, 40));
      err.hidden = false;
      $("count").setAttribute("aria-invalid", "true");
      return;
    }
    mint(count);
  });
  let auto = null;
  $("auto").addEventListener("change", (e) => {
    clearInterval(auto);
    if (e.target.checked) auto = setInterval(() => mint("1"), 1000);
  });
})();
