// LongPollScript -- the JavaScript (and the one HTML page) the `/.lp` transport answers with.
//
// The SDK loads each poll as a <script> inside a hidden same-origin iframe and registers its callbacks on the
// page's window as `pLPCommand<cb>(command, ...)` and `pRTLPCB<cb>(responseNumber, [message, ...])`, so the
// answers call them through `parent` (which is the window itself outside an iframe):
// - `start`: `pLPCommand<cb>("start", id, password)`, followed by the first data (the handshake): the SDK only
//   starts polling once the handshake arrived.
// - data: `pRTLPCB<cb>(n, [msg, ...])` with `n` counting 0, 1, 2, ... per session; the SDK reorders by `n`, so a
//   number must never be skipped. An empty answer (a released poll) carries no number at all.
// - `close`: `pLPCommand<cb>("close", n)`: no data after response `n`; the SDK then reconnects.
// Messages are JSON, which is valid JavaScript; U+2028/U+2029 are escaped for older engines.

/// Builds long-poll response bodies. Pure.
enum LongPollScript {
    /// The `start` answer plus the first data response.
    static func start(callbackID: String?, id: String, password: String, data: [UInt8]) -> [UInt8] {
        var out = call(
            "pLPCommand", callbackID, arguments: Array("\"start\",\"\(id)\",\"\(password)\"".utf8))
        out += data
        return out
    }

    /// A data response: `pRTLPCB<cb>(number, [messages])`. Messages are complete JSON texts.
    static func data(callbackID: String?, number: Int, messages: [String]) -> [UInt8] {
        var arguments = Array("\(number),[".utf8)
        for (index, message) in messages.enumerated() {
            if index > 0 { arguments.append(UInt8(ascii: ",")) }
            appendEscapingLineSeparators(message, to: &arguments)
        }
        arguments.append(UInt8(ascii: "]"))
        return call("pRTLPCB", callbackID, arguments: arguments)
    }

    /// The `close` command after response `lastNumber` (nil when no data response was ever sent).
    static func close(callbackID: String?, lastNumber: Int?) -> [UInt8] {
        call(
            "pLPCommand", callbackID,
            arguments: Array("\"close\"\(lastNumber.map { ",\($0)" } ?? "")".utf8))
    }

    /// The hidden page the SDK keeps in an iframe: when it is unloaded (the SDK removed it, or the browser is
    /// leaving the page), it tells the server with `disconn=t`, by beacon or else a synchronous request.
    static func disconnectFrame(id: String, password: String, namespace: String) -> [UInt8] {
        let url = "/.lp?disconn=t&id=\(id)&pw=\(password)&ns=\(namespace)"
        let page = """
            <!DOCTYPE html><html><head><meta charset="utf-8"><title></title></head><body><script>
            (function () {
              var sent = false;
              function leave() {
                if (sent) return;
                sent = true;
                var url = "\(url)";
                try { if (navigator.sendBeacon && navigator.sendBeacon(url)) return; } catch (e) {}
                try { var x = new XMLHttpRequest(); x.open("GET", url, false); x.send(); } catch (e) {}
              }
              window.addEventListener("pagehide", leave);
              window.addEventListener("unload", leave);
            })();
            </script></body></html>

            """
        return Array(page.utf8)
    }

    /// `(function(w){var f=w["<name><cb>"];if(f)f(<arguments>);})(<the page's window>);`
    private static func call(_ name: String, _ callbackID: String?, arguments: [UInt8]) -> [UInt8] {
        var out = Array("(function(w){var f=w[\"\(name)\(callbackID ?? "")\"];if(f)f(".utf8)
        out.reserveCapacity(out.count + arguments.count + 64)
        out += arguments
        out += Array(");})(typeof parent!==\"undefined\"&&parent?parent:this);\n".utf8)
        return out
    }

    /// Appends `text`, writing U+2028 and U+2029 (E2 80 A8/A9) as `\u2028`/`\u2029`. They can only occur inside
    /// JSON strings, where the escape means the same character.
    private static func appendEscapingLineSeparators(_ text: String, to out: inout [UInt8]) {
        let bytes = text.utf8
        guard bytes.contains(0xE2) else {
            out += bytes
            return
        }
        var iterator = Array(bytes)[...]
        while let byte = iterator.popFirst() {
            if byte == 0xE2, iterator.count >= 2, iterator[iterator.startIndex] == 0x80,
                iterator[iterator.startIndex + 1] == 0xA8 || iterator[iterator.startIndex + 1] == 0xA9
            {
                let last = iterator[iterator.startIndex + 1]
                iterator = iterator.dropFirst(2)
                out += Array((last == 0xA8 ? "\\u2028" : "\\u2029").utf8)
            } else {
                out.append(byte)
            }
        }
    }
}
