// ui-screenshot: take docs/fuseki-ui.png, Fuseki's UI running an audit query,
// with headless Chromium (Debian's chromium package) driven over the
// DevTools protocol. Node 20 needs --experimental-websocket:
//
//   node --experimental-websocket scripts/ui-screenshot.mjs \
//     http://127.0.0.1:3030 prov/queries/lineage.rq SESSION-ID docs/fuseki-ui.png
//
// It opens the dataset's query page with the query in the URL (the UI's
// ?query= parameter), $session bound to the session's IRI as the query's
// comment says to do by hand, clicks the run button, waits for the result
// table and saves a screenshot. The server must not ask for a password (run
// it with fuseki/trails.ttl). Not used by the tests.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [server, queryFile, session, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: ui-screenshot.mjs SERVER-URL QUERY.rq SESSION-ID OUT.png");
  process.exit(2);
}
const query = readFileSync(queryFile, "utf8").split("\n")
  .map((l) => l.startsWith("#") ? l : l.replaceAll("$session", `<https://w3id.org/trails/id/session/${session}>`))
  .join("\n");
const page = `${server}/#/dataset/trails/query?query=${encodeURIComponent(query)}`;

const port = 9300 + Math.floor(Math.random() * 500);
const profile = mkdtempSync(join(tmpdir(), "ui-screenshot-"));
const chrome = spawn("chromium", [
  "--headless", "--no-sandbox", "--disable-gpu", `--remote-debugging-port=${port}`,
  `--user-data-dir=${profile}`, "--window-size=1400,1050", "about:blank",
], { stdio: "ignore" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

try {
  let target;
  for (let i = 0; i < 100 && !target; i++) {
    await sleep(100);
    try {
      const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      target = list.find((t) => t.type === "page");
    } catch { /* not up yet */ }
  }
  if (!target) throw new Error("chromium did not start");
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
  let id = 0;
  const pending = new Map();
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && pending.has(msg.id)) { pending.get(msg.id)(msg); pending.delete(msg.id); }
  };
  const send = (method, params = {}) => new Promise((r) => {
    pending.set(++id, r);
    ws.send(JSON.stringify({ id, method, params }));
  });
  const evaluate = async (expr) =>
    (await send("Runtime.evaluate", { expression: expr, returnByValue: true })).result?.result?.value;
  const waitFor = async (expr, what) => {
    for (let i = 0; i < 150; i++) {
      if (await evaluate(expr)) return;
      await sleep(200);
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  await send("Page.enable");
  await send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 1050, deviceScaleFactor: 1, mobile: false });
  await send("Page.navigate", { url: page });
  await waitFor(`!!document.querySelector(".yasqe_queryButton")`, "the query editor");
  await sleep(1000); // the UI fills the editor from the URL after a short delay
  await evaluate(`document.querySelector(".yasqe_queryButton").click()`);
  await waitFor(`document.querySelectorAll(".yasr table tbody tr").length > 0`, "the results");
  await sleep(500);
  const shot = await send("Page.captureScreenshot", { format: "png" });
  writeFileSync(out, Buffer.from(shot.result.data, "base64"));
  console.log(`wrote ${out}`);
  ws.close();
} finally {
  chrome.kill();
  await sleep(300);
  rmSync(profile, { recursive: true, force: true });
}
