// The flows panel: whether the namespace is paused, each flow key that is
// paused or still has parked timers, and the buttons that pause and
// resume them. Declarations only: the page's main script, which follows
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
  syncRows($("flows-rows"), flowRows, f.flows, (k) => {
    const tr = el("tr");
    const button = el("button", "toggle");
    button.type = "button";
    button.addEventListener("click", () => setFlow({ flow: k.key }, button.dataset.action, button));
    const action = el("td");
    action.append(button);
    tr.append(el("td", "key"), el("td"), el("td", "num"), action);
    return tr;
  }, (tr, k) => {
    const [key, state, parked, action] = tr.cells;
    key.textContent = k.key;
    // Not paused but listed: resumed, its parked timers still being
    // made pending.
    state.textContent = k.paused ? "paused" : "resuming";
    state.className = k.paused ? "paused" : "";
    parked.textContent = number(k.parked);
    const button = action.firstChild;
    button.dataset.action = k.paused ? "resume" : "pause";
    button.textContent = k.paused ? "Resume" : "Pause";
  }, "No flow key is paused.");
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
