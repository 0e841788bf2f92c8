// A wheel-server client and callback verifier, on Node.js (20+) alone.
//
//   const c = new WheelClient("http://127.0.0.1:7070", "s3cret");
//   const cb = { url: "https://shop.example/close", json: { order: 17 } };
//   const t = await c.add(cb, { delay: "30m" });
//
// Every error answer throws a WheelError carrying the server's problem
// document. `verify` checks a callback's Standard Webhooks signature. Run this
// file for a demo against a server started with --allow-private-targets
// (WHEEL_URL, WHEEL_TOKEN and WHEEL_SIGNING_SECRET set as for the server).
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

/** An error answer: `status` and the RFC 9457 `problem` document. */
export class WheelError extends Error {
  constructor(status, problem) {
    const field = problem.field ? ` (field ${problem.field})` : "";
    super(`${status} ${problem.type}: ${problem.detail}${field}`);
    Object.assign(this, { status, problem });
  }
}

// delay: "250ms", "90s", "15m", "2h", "7d", or milliseconds; dueAt: a Date or RFC 3339 text.
const when = ({ dueAt, delay }) => {
  if ((dueAt === undefined) === (delay === undefined)) {
    throw new TypeError("give exactly one of dueAt and delay");
  }
  if (delay !== undefined) return { delay };
  return { due_at: dueAt instanceof Date ? dueAt.toISOString() : dueAt };
};
const seg = encodeURIComponent;

export class WheelClient {
  constructor(baseUrl, token) {
    Object.assign(this, { base: baseUrl.replace(/\/$/, ""), token });
  }

  async #call(method, path, body, query = {}) {
    const defined = Object.entries(query).filter(([, v]) => v !== undefined);
    const q = new URLSearchParams(defined).toString();
    const headers = this.token ? { Authorization: `Bearer ${this.token}` } : {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const r = await fetch(`${this.base}${path}${q ? `?${q}` : ""}`, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    if (!r.ok) {
      let problem;
      try { problem = JSON.parse(text); } catch { problem = { detail: text }; }
      throw new WheelError(r.status, problem);
    }
    return text ? JSON.parse(text) : null;
  }

  /** callback: { url, method?, headers?, json? or body? }; opts: { dueAt or delay, key?, retry? } */
  add(callback, { key, retry, ...at }) {
    return this.#call("POST", "/v1/timers", { key, retry, callback, ...when(at) });
  }
  get(key) { return this.#call("GET", `/v1/timers/${seg(key)}`); }
  cancel(key) { return this.#call("DELETE", `/v1/timers/${seg(key)}`); }
  reschedule(key, at) { return this.#call("PATCH", `/v1/timers/${seg(key)}`, when(at)); }
  /** One page: { timers, next_cursor }. */
  list({ state = "pending", limit, cursor, due_before } = {}) {
    return this.#call("GET", "/v1/timers", undefined, { state, limit, cursor, due_before });
  }
  deadLetters({ limit, cursor } = {}) {
    return this.#call("GET", "/v1/dead-letters", undefined, { limit, cursor });
  }
  retryDead(key) { return this.#call("POST", `/v1/dead-letters/${seg(key)}/retry`); }
}

/** Checks a callback's Standard Webhooks signature (body: a Buffer); throws why not. */
export function verify(secret, headers, body, now = Date.now() / 1000, tolerance = 300) {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const [id, ts, sigs] = ["id", "timestamp", "signature"].map((n) => h[`webhook-${n}`]);
  if (!id || !ts || !sigs) {
    throw new Error("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^\d+$/.test(ts)) throw new Error(`bad timestamp ${JSON.stringify(ts)}`);
  if (Math.abs(now - Number(ts)) > tolerance) {
    throw new Error("timestamp too old or too new (a replay?)");
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64"); // padding may be left out
  const mac = createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest("base64");
  const expected = Buffer.from(mac);
  for (const entry of sigs.split(" ")) {
    const [version, sig = ""] = entry.split(",");
    const got = Buffer.from(sig);
    const same = got.length === expected.length && timingSafeEqual(got, expected);
    if (version === "v1" && same) return;
  }
  throw new Error("no signature matches");
}

async function waitFor(ok, seconds = 20) {
  for (const end = Date.now() + seconds * 1000; !(await ok()); ) {
    if (Date.now() > end) throw new Error("gave up waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function demo() {
  let arrived;
  const callback = new Promise((resolve) => (arrived = resolve));
  const rx = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c)).on("end", () => {
      const fail = req.url.startsWith("/fail");
      res.writeHead(fail ? 500 : 200).end();
      if (!fail) arrived({ path: req.url, headers: req.headers, body: Buffer.concat(chunks) });
    });
  });
  await new Promise((r) => rx.listen(0, "127.0.0.1", r)); // port 0: a free one
  const here = `http://127.0.0.1:${rx.address().port}`;
  const { WHEEL_URL = "http://127.0.0.1:7070", WHEEL_TOKEN, WHEEL_SIGNING_SECRET } = process.env;
  const c = new WheelClient(WHEEL_URL, WHEEL_TOKEN);
  const secret = WHEEL_SIGNING_SECRET.split(",")[0];

  const t = await c.add({ url: `${here}/hello`, json: { hello: "wheel" } }, { delay: "2s" });
  console.log(`added ${t.key}, due ${t.due_at}`);

  // While it waits: the rest of the API, on timers of our own.
  const later = `demo:${randomBytes(4).toString("hex")}`;
  await c.add({ url: `${here}/later` }, { key: later, delay: "1h" });
  await c.reschedule(later, { delay: "2h" });
  const listed = (await c.list({ limit: 1000 })).timers.some((x) => x.key === later);
  if (!listed) throw new Error(`${later} not listed`);
  await c.cancel(later);
  await c.get(later).catch((e) => console.log(`cancelled, then: ${e.message}`));
  const fail = `demo:fail:${randomBytes(4).toString("hex")}`;
  await c.add({ url: `${here}/fail` }, { key: fail, delay: 0, retry: { max_attempts: 1 } });
  await waitFor(async () => (await c.get(fail)).state === "dead");
  const dead = (await c.deadLetters()).dead_letters.some((d) => d.key === fail);
  if (!dead) throw new Error(`${fail} not among the dead letters`);
  console.log(`dead letter ${fail}; retried: ${(await c.retryDead(fail)).state}`);
  await waitFor(async () => (await c.get(fail)).state === "dead");
  await c.cancel(fail); // removes the dead letter

  setTimeout(() => { console.error("no callback within 30 s"); process.exit(1); }, 30_000).unref();
  const got = await callback;
  verify(secret, got.headers, got.body);
  console.log(`verified callback: ${got.path} ${got.headers["webhook-id"]} ${got.body}`);
  for (const [what, body, now] of [
    ["tampered body", Buffer.concat([got.body, Buffer.from(" ")]), undefined],
    ["stale timestamp", got.body, Date.now() / 1000 + 600],
  ]) {
    try {
      verify(secret, got.headers, body, now);
    } catch (e) {
      console.log(`${what} rejected: ${e.message}`);
      continue;
    }
    throw new Error(`${what} accepted`);
  }
  rx.close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  demo().catch((e) => { console.error(e); process.exit(1); });
}
