// The flows panel: whether the namespace is paused, the default limits,
// each flow key the server lists (paused, parked, limited, in flight,
// breaker, or run here) with its limits, load, breaker and lateness, the
// buttons that pause and resume them, and the form that sets and removes
// a key's limits. Declarations only: the page's main script, which follows
// this one, calls them, and they call its helpers ($, api, el, syncRows,
// showNotice, number, refresh) when they run.

// Pauses or resumes `target` ({ flow: KEY } or { all: true }) as
// `action` ("pause" or "resume") says; true when the server did it.
async function setFlow(target, action, button) {
  button.disabled = true;
  let done = false;
  try {
    await api("POST", "/v1/flows:" + action, target);
    showNotice("");
    done = true;
  } catch (e) {
    const what = target.all ? "the namespace" : target.flow;
    showNotice("The " + action + " of " + what + " failed: " + e.message);
  }
  button.disabled = false;
  refresh();
  return done;
}

const flowRows = new Map();
function renderFlows(f) {
  const all = $("flows-all");
  all.dataset.action = f.paused ? "resume" : "pause";
  all.textContent = f.paused ? "Resume all" : "Pause all";
  const state = $("flows-state");
  state.textContent = f.paused ? "(all paused: no timer is claimed)" : "(running)";
  state.classList.toggle("paused", f.paused);
  $("flows-defaults").textContent = "Defaults (keys without limits of their own): " +
    (f.defaults ? limitsText(f.defaults) : "none");
  syncRows($("flows-rows"), flowRows, f.flows, (k) => {
    const tr = el("tr");
    const button = el("button", "toggle");
    button.type = "button";
    button.addEventListener("click", () => setFlow({ flow: k.key }, button.dataset.action, button));
    const action = el("td");
    action.append(button);
    tr.append(el("td", "key"), el("td", "state"), el("td", "limits"), el("td", "num in-flight"),
      el("td", "num waiting"), el("td", "num parked"), el("td", "breaker"),
      el("td", "num lateness"), action);
    return tr;
  }, (tr, k) => {
    const [key, state, limits, inFlight, waiting, parked, breaker, lateness, action] = tr.cells;
    key.textContent = k.key;
    // Not paused, parked timers, breaker closed: resumed, its parked
    // timers still being made pending.
    const resuming = !k.paused && k.parked > 0 && k.breaker.state === "closed";
    state.textContent = k.paused ? "paused" : resuming ? "resuming" : "running";
    state.className = "state" + (k.paused ? " paused" : "");
    limits.textContent = k.limits ? limitsText(k.limits) : "defaults";
    inFlight.textContent = number(k.in_flight);
    waiting.textContent = number(k.waiting);
    parked.textContent = number(k.parked);
    breaker.textContent = breakerText(k.breaker);
    breaker.className = "breaker" + (k.breaker.state === "closed" ? "" : " breaker-open");
    lateness.textContent = millis(k.lateness_p50_ms) + " / " + millis(k.lateness_p99_ms);
    const button = action.firstChild;
    button.dataset.action = k.paused ? "resume" : "pause";
    button.textContent = k.paused ? "Resume" : "Pause";
  }, "No flow key is paused, limited or running.");
}

// Milliseconds as seconds() writes them; null (none ran here) as "–".
function millis(v) {
  return v === null || v === undefined ? "–" : seconds(v / 1000);
}

// "500 / 1 s (burst 10), 20 at once, breaker after 5 failures", or "none".
function limitsText(l) {
  const parts = [];
  if (l.rate) {
    parts.push(number(l.rate.count) + " / " + seconds(l.rate.period_ms / 1000) +
      (l.rate.burst > 1 ? " (burst " + number(l.rate.burst) + ")" : ""));
  }
  if (l.parallelism) parts.push(number(l.parallelism) + " at once");
  if (l.breaker) parts.push("breaker after " + number(l.breaker.failures) + " failures");
  return parts.length ? parts.join(", ") : "none";
}

// "closed", "closed, 2 failures", "open until 12:00:05".
function breakerText(b) {
  let text = b.state;
  if (b.failures > 0 && b.state === "closed") text += ", " + number(b.failures) + " failures";
  if (b.next_probe) text += (b.state === "open" ? " until " : ", next probe ") + localTime(new Date(b.next_probe));
  return text;
}

// The limits form's key; says so next to the form when it is empty. The
// form's messages stay there: the page's notice is cleared by every
// refresh.
function limitsKey() {
  const key = $("limits-key").value;
  if (!key.trim()) $("limits-error").textContent = "Enter the flow key to limit: a callback's flow, or its URL's origin.";
  return key.trim() ? key : null;
}

// Sets the form's key's limits: each part filled in; none filled in is
// no limit at all (not even the defaults).
async function setLimitsFromForm() {
  const key = limitsKey();
  if (key === null) return;
  const limits = {};
  const rate = $("limits-rate").valueAsNumber;
  if (Number.isFinite(rate)) limits.rate = { count: rate, period_ms: Number($("limits-period").value) };
  const parallelism = $("limits-parallelism").valueAsNumber;
  if (Number.isFinite(parallelism)) limits.parallelism = parallelism;
  if ($("limits-breaker").checked) limits.breaker = {};
  await sendLimits("PUT", "/v1/flows:limits", { flow: key, limits }, "The limits of " + key);
}

// Removes the form's key's own limits: the defaults apply to it again.
async function removeLimitsFromForm() {
  const key = limitsKey();
  if (key === null) return;
  await sendLimits("POST", "/v1/flows:unlimit", { flow: key }, "Removing the limits of " + key);
}

async function sendLimits(method, path, body, what) {
  const buttons = [$("limits-set"), $("limits-remove")];
  buttons.forEach((b) => { b.disabled = true; });
  try {
    await api(method, path, body);
    $("limits-error").textContent = "";
  } catch (e) {
    $("limits-error").textContent = what + " failed: " + e.message;
  }
  buttons.forEach((b) => { b.disabled = false; });
  refresh();
}

// The form's flow key, paused; the field is cleared once it is.
async function pauseFlowByName() {
  const key = $("flow-key").value;
  if (!key.trim()) {
    showNotice("Enter the flow key to pause: a callback's flow, or its URL's origin.");
    return;
  }
  if (await setFlow({ flow: key }, "pause", $("flow-pause"))) $("flow-key").value = "";
}
