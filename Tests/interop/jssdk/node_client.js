// node_client.js -- client.js under Node instead of a browser page: the same Firebase JS SDK bundle and the same
// `canopyJS` calls, driven over stdin/stdout by test_jssdk_node.py. Run with `node --experimental-websocket`
// (Node 20; the SDK then uses Node's WebSocket). Each input line is {"id", "method", "args"}; each answer is
// {"id", "ok"} or {"id", "error"}. The methods `events` and `logs` return what client.js collected.
const fs = require("fs");
const path = require("path");
const readline = require("readline");

globalThis.window = globalThis;  // client.js hangs `canopyJS` on window
new Function(fs.readFileSync(process.argv[2], "utf8"))();
new Function(fs.readFileSync(path.join(__dirname, "client.js"), "utf8"))();

function answer(message) { process.stdout.write(JSON.stringify(message) + "\n"); }

readline.createInterface({ input: process.stdin }).on("line", (line) => {
    const { id, method, args } = JSON.parse(line);
    if (method === "events" || method === "logs") return answer({ id, ok: window.canopyJS[method] });
    Promise.resolve()
        .then(() => window.canopyJS[method](...args))
        .then((v) => answer({ id, ok: v === undefined ? null : v }),
              (e) => answer({ id, error: String((e && e.message) || e) }));
}).on("close", () => process.exit(0));
