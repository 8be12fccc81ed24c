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

  for (const el of document.querySelectorAll("#now, #auto-label, .js-only, #result [data-copy]")) el.hidden = false;

  const FORMS = ["compose-form", "decode-form", "range-form"].map($);

  // A layout select's custom parts show only while Custom… is chosen (the
  // server renders them so; without this script noscript.css shows them).
  for (const select of document.querySelectorAll("select[name=layout]")) {
    const custom = $(select.id + "-custom");
    if (!custom) continue;
    const show = () => { custom.hidden = select.value !== "custom"; };
    select.addEventListener("change", show);
    show();
  }
  // Each time field and its picker (UTC): either fills the other.
  const PICKERS = [["timestamp", "at"], ["range_from", "range_from_at"], ["range_to", "range_to_at"]];

  // The form's query, as the browser would submit it (with the button that
  // submitted it, e.g. a list's sort heading), without empty values.
  function query(form, submitter) {
    const params = new URLSearchParams();
    const data = new FormData(form);
    if (submitter && submitter.name) data.append(submitter.name, submitter.value);
    // A picker only matters when its field is blank: keep URLs short.
    for (const [text, picker] of PICKERS) {
      if ((data.get(text) || "").trim() !== "") data.delete(picker);
    }
    // The compose fields' own layout matters only when it is another.
    if (data.get("fields_of") === data.get("layout")) data.delete("fields_of");
    for (const [k, v] of data) {
      if (v !== "") params.append(k, v);
    }
    // Two blank times still ask for a range (now ..= now).
    if (form.id === "range-form" && ![...params.keys()].some((k) => k.startsWith("range_"))) {
      params.append("range_from", "");
    }
    return params.toString();
  }

  // Fetches /?query and replaces the result, the errors and the language
  // link; after a submit, scrolls the result into view (as the form's
  // action, /#result, does without this script).
  async function update(form, submitter, submitted) {
    const qs = query(form, submitter);
    // A focused control inside the result (a sort heading) keeps the focus.
    const active = document.activeElement;
    const refocus = active && $("result").contains(active) && active.id ? active.id : null;
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
    // The compose form's fields follow its layout (kept while the layout
    // itself is in error, so a spec being typed does not flicker them).
    if (form.id === "compose-form") {
      const fresh = doc.getElementById("compose-fields");
      const current = $("compose-fields");
      const layoutError = doc.getElementById("compose-layout-error");
      if (fresh && layoutError && layoutError.hidden && fresh.dataset.layout !== current.dataset.layout) {
        current.innerHTML = fresh.innerHTML;
        current.dataset.layout = fresh.dataset.layout;
        for (const attr of ["min", "max"]) $("at").setAttribute(attr, doc.getElementById("at").getAttribute(attr));
      }
    }
    // The layout lab follows the chosen layout.
    const lab = doc.getElementById("lab");
    if (lab && $("lab")) $("lab").innerHTML = lab.innerHTML;
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
    for (const other of FORMS) {
      if (other === form) continue;
      for (const err of other.querySelectorAll(".error")) {
        err.hidden = true;
        const input = $(err.id.replace(/-error$/, ""));
        if (input) input.removeAttribute("aria-invalid");
      }
    }
    $("lang-switch").href = doc.getElementById("lang-switch").getAttribute("href");
    history.replaceState(null, "", qs ? "/?" + qs : "/");
    for (const button of $("result").querySelectorAll("[data-copy]")) button.hidden = false;
    localTime();
    if (refocus && $(refocus)) $(refocus).focus();
    else if (submitted) $("result").scrollIntoView({ block: "start" });
  }

  // The decoded time in the reader's own zone, beside the server's UTC.
  function localTime() {
    const dd = $("time-local");
    if (!dd) return;
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const when = new Date(Number(dd.dataset.ms)).toLocaleString(document.documentElement.lang,
      { dateStyle: "long", timeStyle: "long" });
    dd.textContent = !zone || when.includes(zone) ? when : when + " (" + zone + ")";
    for (const el of $("result").querySelectorAll(".js-only")) el.hidden = false;
  }
  localTime();

  function schedule(form) {
    clearTimeout(timer);
    timer = setTimeout(() => update(form), 120);
  }

  for (const form of FORMS) {
    form.addEventListener("input", () => schedule(form));
    form.addEventListener("change", () => schedule(form));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      clearTimeout(timer);
      update(form, e.submitter, true);
    });
  }

  $("now").addEventListener("click", () => {
    const now = Date.now();
    $("timestamp").value = String(now);
    $("at").value = new Date(now).toISOString().slice(0, 23);
    update($("compose-form"));
  });

  // Unix ms of a typed time (digits, or ISO-8601 read as UTC when it has
  // no zone, as the server reads it), or NaN.
  function typedMs(v) {
    if (/^\d{1,16}$/.test(v)) return Number(v);
    if (!/^\d{4}-\d\d-\d\d/.test(v)) return NaN;
    const zoned = /(Z|[+-]\d\d:?\d\d)$/i.test(v) || !v.includes("T") ? v : v + "Z";
    return Date.parse(zoned);
  }

  for (const [text, picker] of PICKERS) {
    // The picker shows the typed time (UTC) ...
    const follow = () => {
      const ms = typedMs($(text).value.trim());
      const d = new Date(ms);
      $(picker).value = Number.isFinite(ms) && !isNaN(d) ? d.toISOString().slice(0, 23) : "";
    };
    $(text).addEventListener("input", follow);
    if ($(text).value.trim() !== "" && $(picker).value === "") follow();
    // ... and a picked time fills the field, in Unix ms.
    $(picker).addEventListener("change", () => {
      const v = $(picker).value;
      if (!v) return;
      const ms = Date.parse(v + "Z"); // the picker is labelled UTC
      if (Number.isFinite(ms)) $(text).value = String(ms);
    });
  }

  // Copy buttons (the ID, the SQL): the text is in data-copy, a string, so
  // exact at any size; without the clipboard API the text is selected.
  $("result").addEventListener("click", async (e) => {
    const button = e.target.closest("button[data-copy]");
    if (!button) return;
    try {
      await navigator.clipboard.writeText(button.dataset.copy);
    } catch (err) {
      const range = document.createRange();
      range.selectNodeContents(button.previousElementSibling);
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      document.execCommand && document.execCommand("copy");
    }
    $(button.dataset.status).textContent = body.dataset.copied;
  });

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
