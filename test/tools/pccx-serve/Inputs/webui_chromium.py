"""Drives pccx-serve's chat page in headless Chromium, as a person would.

usage: webui_chromium.py URL OUTDIR [API_KEY]

Opens URL in `chromium --headless` and steers it over the DevTools protocol
(a minimal WebSocket client: the standard library only). With API_KEY the
page must ask for a key first; the key is typed into its form. Then it sets
max tokens in the settings, types a message, clicks Send and waits for the
streamed reply; then stops a second reply with the Stop button (the
network slowed so that it is still arriving); saves OUTDIR/chat.png. Last, at a phone's viewport (390x844)
it reloads the page, sends a message and checks that the message field and
the Send button are on screen and not covered, and that nothing scrolls
sideways; saves OUTDIR/phone.png. Prints one line per finding for FileCheck.
"""
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request

TIMEOUT = 120  # seconds for each wait


class WebSocket:
    """A client WebSocket (RFC 6455): text frames out, whole messages in."""

    def __init__(self, url):
        parts = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n" % (parts.path, parts.hostname, parts.port, key)).encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self._recv()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("WebSocket handshake refused: %r" % head)

    def _recv(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise RuntimeError("the browser closed the DevTools connection")
        return data

    def _read(self, n):
        while len(self.buffer) < n:
            self.buffer += self._recv()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send_frame(self, opcode, payload):
        # A client masks every frame.
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def receive(self):
        message = b""
        while True:
            first, second = self._read(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)  # the server does not mask
            if opcode == 0x8:
                raise RuntimeError("the browser closed the DevTools connection")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()


class Page:
    """One page target: commands by id; events are not needed here."""

    def __init__(self, url):
        self.ws = WebSocket(url)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.receive())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError("page script failed: %s: %s" % (expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, expression, what):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise RuntimeError("timed out waiting for " + what)

    def click(self, selector):
        """A mouse click at the middle of the element, as a person's."""
        x, y = self.evaluate(
            "(() => { const r = document.querySelector(%s).getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()" % json.dumps(selector))
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def type_into(self, selector, text):
        self.click(selector)
        self.call("Input.insertText", text=text)

    def screenshot(self, path):
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        with open(path, "wb") as f:
            f.write(data)
        width, height = struct.unpack(">II", data[16:24])  # the PNG's IHDR
        return "%dx%d" % (width, height)

    def load(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && !!document.getElementById('prompt')",
                      "the page to load")


def visible(page, selector):
    """Whether the element is inside the viewport and on top at its middle."""
    return page.evaluate(
        "(() => { const e = document.querySelector(%s); const r = e.getBoundingClientRect();"
        " if (r.width < 1 || r.height < 1 || r.left < 0 || r.top < 0 ||"
        "     r.right > innerWidth || r.bottom > innerHeight) return false;"
        " const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);"
        " return e === top || e.contains(top); })()" % json.dumps(selector))


def main():
    url, outdir = sys.argv[1], sys.argv[2]
    api_key = sys.argv[3] if len(sys.argv) > 3 else ""
    profile = os.path.join(outdir, "profile")
    port_file = os.path.join(profile, "DevToolsActivePort")
    if os.path.exists(port_file):
        os.remove(port_file)
    log = open(os.path.join(outdir, "chromium.log"), "w")
    browser = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--user-data-dir=" + profile, "--remote-debugging-port=0",
         "--window-size=1200,900", "about:blank"],
        stdout=log, stderr=log)
    try:
        deadline = time.time() + TIMEOUT
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.time() > deadline or browser.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port (see chromium.log)")
            time.sleep(0.1)
        port = int(open(port_file).read().split("\n")[0])
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=30))
        page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
        page.call("Page.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1200, height=900,
                  deviceScaleFactor=1, mobile=False)
        page.load(url + "/")

        if api_key:
            page.wait_for("!document.getElementById('key-form').hidden", "the page to ask for the key")
            print("asks for the key:", page.evaluate("document.getElementById('key-reason').textContent"))
            page.type_into("#key", api_key)
            page.click("#key-form button")
        model = page.wait_for(
            "(t => t.includes('tokens of context') && t)(document.getElementById('model').textContent)",
            "the model's name")
        print("model:", model)
        # The card comes from a request of its own after the model's name:
        # wait for it, not race it.
        print("model card:", page.wait_for(
            "(l => l.length > 1 && l[1].trim())(document.getElementById('card').textContent.split('\\n'))",
            "the model card"))

        page.click("#settings summary")
        page.type_into("#max-tokens", "40")
        page.type_into("#prompt", "Tell me of Moses.")
        page.click("#send")
        # The page counts the stream's text events on the reply as they come.
        page.wait_for("!!document.querySelector('.msg.assistant[data-state=streaming]') ||"
                      "!!document.querySelector('.msg.assistant[data-state=done]')",
                      "the reply to start")
        state = page.wait_for(
            "(() => { const e = document.querySelector('.msg.assistant');"
            " const error = document.getElementById('error');"
            " if (!error.hidden) return 'error: ' + error.textContent;"
            " return e && e.dataset.state !== 'streaming' && e.dataset.state !== 'waiting' && e.dataset.state; })()",
            "the reply to end")
        reply = page.evaluate("(() => { const e = document.querySelector('.msg.assistant');"
                              " return {text: e.querySelector('.bubble').textContent,"
                              " chunks: Number(e.dataset.chunks),"
                              " stats: e.querySelector('.stats').textContent}; })()")
        print("reply:", state, "| streamed in more than one event:", reply["chunks"] > 1,
              "| text:", bool(reply["text"].strip()))
        print("stats:", reply["stats"])
        print("user message:", page.evaluate("document.querySelector('.msg.user .bubble').textContent"))

        # Stop: the network slowed to a trickle so that the reply is still
        # arriving when the button is clicked.
        page.call("Network.enable")
        page.call("Network.emulateNetworkConditions", offline=False, latency=0,
                  downloadThroughput=400, uploadThroughput=-1)
        page.type_into("#prompt", "And then?")
        page.click("#send")
        page.wait_for("(e => e.length === 2 && e[1].dataset.state === 'streaming')"
                      "(document.querySelectorAll('.msg.assistant'))", "the second reply to stream")
        print("stop button shown while streaming:", page.evaluate("!document.getElementById('stop').hidden"))
        page.click("#stop")
        stopped = page.wait_for(
            "(e => e.dataset.state !== 'streaming' && {state: e.dataset.state,"
            " text: e.querySelector('.bubble').textContent,"
            " send: !document.getElementById('send').hidden})"
            "(document.querySelectorAll('.msg.assistant')[1])", "the stop")
        page.call("Network.emulateNetworkConditions", offline=False, latency=0,
                  downloadThroughput=-1, uploadThroughput=-1)
        print("after stop:", stopped["state"], "| partial text kept:", bool(stopped["text"].strip()),
              "| send button back:", stopped["send"])
        print("desktop screenshot:", page.screenshot(os.path.join(outdir, "chat.png")))

        page.call("Emulation.setDeviceMetricsOverride", width=390, height=844,
                  deviceScaleFactor=1, mobile=True)
        page.load(url + "/")
        # The key is remembered (localStorage): no question this time.
        page.wait_for("document.getElementById('model').textContent.includes('tokens of context')",
                      "the model's name on the phone")
        print("phone: viewport", page.evaluate("innerWidth + 'x' + innerHeight"),
              "| key asked again:", not page.evaluate("document.getElementById('key-form').hidden"))
        # A turn on the phone too, sent with the button.
        page.type_into("#prompt", "And the earth?")
        page.click("#send")
        print("phone: reply", page.wait_for(
            "(e => e && ['done', 'stopped'].includes(e.dataset.state) && e.dataset.state)"
            "(document.querySelector('.msg.assistant'))", "the reply on the phone"))
        print("phone: message field visible:", visible(page, "#prompt"),
              "| send button visible:", visible(page, "#send"),
              "| scrolls sideways:",
              page.evaluate("document.documentElement.scrollWidth > innerWidth"))
        print("phone screenshot:", page.screenshot(os.path.join(outdir, "phone.png")))
        try:
            page.call("Browser.close")
        except RuntimeError:
            pass  # the connection may close before the answer
    finally:
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait()
        log.close()


if __name__ == "__main__":
    main()
