// Tidemark console: the few things server-rendered HTML cannot do.
//
// Writes go to the JSON API with the token in the Authorization header. The
// token is asked for once and kept in sessionStorage: this tab only, gone
// when it closes, never in a cookie. Because no cookie carries credentials,
// another site cannot make this browser send an authenticated request
// (CSRF): it can neither read the token nor set the header.
//
// The channel list polls its rows with If-None-Match; an unchanged list is
// a 304 with no body.
"use strict";
(function () {
  const KEY = "tidemark.token";
  const POLL_MS = 3000;
  const FLASH = "tidemark.flash";

  const $ = (sel, root) => (root || document).querySelector(sel);

  function token() { return sessionStorage.getItem(KEY) || ""; }

  function showTokenStatus() {
    const el = $("#token-status");
    if (el) el.hidden = !token();
  }

  // askToken opens the token dialog; it resolves to the token, or "" when
  // the person cancels.
  function askToken(why) {
    const dlg = $("#token-dialog");
    const input = $("#token-input");
    $("#token-why").textContent = why || "";
    input.value = "";
    dlg.returnValue = "";
    return new Promise((resolve) => {
      dlg.addEventListener("close", () => {
        const t = dlg.returnValue === "ok" ? input.value.trim() : "";
        input.value = "";
        if (t) sessionStorage.setItem(KEY, t);
        showTokenStatus();
        resolve(t);
      }, { once: true });
      dlg.showModal();
      input.focus();
    });
  }

  // problemText reads an RFC 9457 problem+json answer, or says what came.
  async function problemOf(res) {
    const type = res.headers.get("Content-Type") || "";
    if (type.includes("json")) {
      try {
        const p = await res.json();
        return { title: p.title || res.statusText, detail: p.detail || "", param: p.param || "" };
      } catch (e) { /* fall through */ }
    }
    return { title: res.status + " " + res.statusText, detail: "", param: "" };
  }

  function bodyOf(form) {
    const body = {};
    for (const el of form.elements) {
      if (!el.name || el.dataset.pathOnly !== undefined) continue;
      if (el.type === "checkbox") {
        if (el.checked) body[el.name] = true;
      } else if (el.value.trim() !== "") {
        body[el.name] = el.value.trim();
      }
    }
    return body;
  }

  async function submitWrite(form, submitter) {
    const status = $(".form-status", form);
    const method = (submitter && submitter.dataset.method) || form.dataset.apiMethod;
    // A form with a button per action (the rollout's) names the path on
    // the button.
    let path = (submitter && submitter.dataset.apiPath) || form.dataset.apiPath;
    if (path.includes("{version}")) {
      path = path.replace("{version}", encodeURIComponent(form.elements.version.value.trim()));
    }
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    status.className = "form-status";
    status.textContent = "";

    // A person signed in writes with their session (the cookie, and the
    // header no other site's form can send); else a token.
    const signedIn = document.body.dataset.signedIn === "true";
    let tok = signedIn ? "session" : (token() || await askToken(""));
    if (!tok) {
      status.className = "form-status error";
      status.textContent = "Nothing was changed: a token is needed.";
      return;
    }
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    try {
      for (let attempt = 0; ; attempt++) {
        const headers = { "Content-Type": "application/json" };
        if (signedIn) headers["X-Tidemark-Console"] = "1";
        else headers["Authorization"] = "Bearer " + tok;
        if (form.dataset.ifMatch) headers["If-Match"] = form.dataset.ifMatch;
        const res = await fetch(path, { method, headers, body: JSON.stringify(bodyOf(form)), cache: "no-store" });
        if (res.status === 202) {
          // Recorded, not done: the change waits for approvals.
          let c = {};
          try { c = await res.json(); } catch (e) { /* the status says enough */ }
          const n = c.approvals_needed || 0;
          status.className = "form-status pending";
          status.textContent = "Nothing has changed yet: change " + (c.id || "") + " waits for " + n +
            (n === 1 ? " approval" : " approvals") + " (see Changes). Reloading…";
          setTimeout(() => location.reload(), 2500);
          return;
        }
        if (res.ok) {
          // The reload would wipe a message here: it is kept for the
          // reloaded page to show (showFlash).
          const done = doneText(form);
          status.className = "form-status ok";
          status.textContent = done + " Reloading…";
          sessionStorage.setItem(FLASH, done);
          location.reload();
          return;
        }
        const p = await problemOf(res);
        if (res.status === 401 && attempt === 0 && !signedIn) {
          sessionStorage.removeItem(KEY);
          showTokenStatus();
          tok = await askToken("The server refused that token: " + p.detail);
          if (tok) continue;
        }
        // The API tells a script to send "force": true; here that is the
        // Force checkbox.
        let detail = p.detail;
        if (form.elements.force) {
          detail = detail.replace(/send "force": true \(tidemark promote --force\)/, "tick Force and pin again");
        }
        let text = p.title + (detail ? ": " + detail : "");
        if (res.status === 412) text += " Reload the page to see what changed.";
        status.className = "form-status error";
        status.textContent = text;
        const field = p.param && form.elements[p.param];
        if (field && field.setAttribute) {
          field.setAttribute("aria-invalid", "true");
          field.focus();
        }
        return;
      }
    } catch (e) {
      status.className = "form-status error";
      status.textContent = "The request failed: " + e.message;
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  // doneText says what a write did, from the form: "Pinned v1.33 to
  // v1.33.5+k3s1." (data-done names the action, the version field its
  // object).
  function doneText(form) {
    const what = form.dataset.done || "Done";
    const v = form.elements.version && form.elements.version.value.trim();
    return what + (v ? " " + v : "") + ".";
  }

  // showFlash shows, once, what the write before the reload did.
  function showFlash() {
    const text = sessionStorage.getItem(FLASH);
    const el = $("#flash");
    if (!text || !el) return;
    sessionStorage.removeItem(FLASH);
    el.textContent = text;
    el.hidden = false;
  }

  // The graph's "swipe it sideways" hint is for a graph wider than its
  // box; one that fits has none.
  function setUpGraphHint() {
    const wrap = $(".graph-wrap");
    const hint = $(".graph-scroll-hint");
    if (!wrap || !hint) return;
    const fit = () => { hint.hidden = wrap.scrollWidth <= wrap.clientWidth + 1; };
    fit();
    window.addEventListener("resize", fit);
  }

  function setUpWrites() {
    for (const form of document.querySelectorAll("form.api-form")) {
      form.hidden = false;
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        submitWrite(form, ev.submitter);
      });
    }
    const forget = $("#forget-token");
    if (forget) forget.addEventListener("click", () => { sessionStorage.removeItem(KEY); showTokenStatus(); });
    const cancel = $("#token-cancel");
    if (cancel) cancel.addEventListener("click", () => $("#token-dialog").close("cancel"));
    showTokenStatus();
  }

  function setUpLive() {
    const table = $("table[data-live]");
    if (!table) return;
    const tbody = $("tbody", table);
    const say = $("#live-status");
    let etag = table.dataset.etag || "";
    let busy = false;

    async function poll() {
      if (busy || document.hidden) return;
      busy = true;
      try {
        const res = await fetch(table.dataset.live, { headers: etag ? { "If-None-Match": etag } : {}, cache: "no-store" });
        if (res.status === 304) return;
        if (!res.ok) {
          const p = await problemOf(res);
          say.textContent = "Live updates paused: " + (p.detail || p.title);
          return;
        }
        const before = new Map();
        for (const tr of tbody.rows) before.set(tr.dataset.channel, { version: tr.dataset.version, rollout: tr.dataset.rollout });
        const rolloutOf = (tr) => tr.dataset.rollout ? tr.dataset.channel + " rollout " + tr.dataset.rollout : "";
        tbody.innerHTML = await res.text();
        etag = res.headers.get("ETag") || "";
        table.dataset.etag = etag;
        const moved = [];
        for (const tr of tbody.rows) {
          const was = before.get(tr.dataset.channel) || {};
          if (was.version !== tr.dataset.version) {
            tr.classList.add("changed");
            moved.push(tr.dataset.channel + " now serves " + (tr.dataset.version || "nothing"));
          } else if ((was.rollout || "") !== (tr.dataset.rollout || "")) {
            tr.classList.add("changed");
            moved.push(rolloutOf(tr) || tr.dataset.channel + " has no rollout");
          }
        }
        say.textContent = moved.length ? moved.join("; ") + "." : "";
      } catch (e) {
        say.textContent = "Live updates paused: " + e.message;
      } finally {
        busy = false;
      }
    }
    setInterval(poll, POLL_MS);
    document.addEventListener("visibilitychange", poll);
  }

  showFlash();
  setUpWrites();
  setUpLive();
  setUpGraphHint();
})();
