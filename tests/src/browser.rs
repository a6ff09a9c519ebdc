//! A headless Chromium driven over the Chrome DevTools Protocol, for tests of the
//! admin page: [`Browser::launch`] starts `chromium --headless` (owned by a
//! [`ProcessGuard`], so killed on drop) with a throw-away profile and every
//! background service off, and connects to it; [`Page`] then loads a URL,
//! evaluates JavaScript, types (`Input.insertText`), clicks with real mouse events
//! at an element's centre (`Input.dispatchMouseEvent`) and takes screenshots.
//!
//! The protocol runs over one WebSocket (RFC 6455) to the browser endpoint that
//! Chromium writes to `<profile>/DevToolsActivePort`; the client here is the
//! least a test needs: a fixed handshake key (checked against its RFC accept
//! value), masked text frames out, unmasked text, continuation, ping and close
//! frames in. Blocking I/O with timeouts; no threads.
//!
//! Chromium is told to resolve no name but loopback addresses
//! (`--host-resolver-rules`), so a test browser talks to nothing but the servers
//! of the test. This module must never point the browser at anything else.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::process::ProcessGuard;

/// How long one protocol call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long Chromium may take to open its DevTools port.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest message accepted (screenshots are base64 PNGs of a few MB).
const MAX_MESSAGE: usize = 64 << 20;
/// RFC 6455's sample key and the accept value a server must answer it with.
const WS_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const WS_ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// The Chromium binary, if one is installed (`chromium` or `chromium-browser`).
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Whether this process runs as root (it owns `/proc/self`).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A running headless Chromium and the protocol connection to it.
#[derive(Debug)]
pub struct Browser {
    ws: WebSocket,
    next_id: u64,
    _process: ProcessGuard,
    _profile: tempfile::TempDir,
}

/// One tab of a [`Browser`].
#[derive(Debug)]
pub struct Page<'b> {
    browser: &'b mut Browser,
    session: String,
}

impl Browser {
    /// Starts `chromium` headless with a window of `width` x `height` and connects.
    ///
    /// # Panics
    /// If it does not start or its DevTools endpoint does not answer, with its log.
    pub fn launch(chromium: &Path, log_dir: &Path, width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--disable-gpu",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--metrics-recording-only",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            &format!("--window-size={width},{height}"),
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()));
        if running_as_root() {
            // Chromium's sandbox refuses to run as root.
            cmd.arg("--no-sandbox");
        }
        cmd.arg("about:blank");
        let process = ProcessGuard::spawn("chromium", cmd, log_dir).expect("starting chromium");
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + START_TIMEOUT;
        let (port, path) = loop {
            let text = std::fs::read_to_string(&port_file).unwrap_or_default();
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                break (port.trim().to_owned(), path.trim().to_owned());
            }
            assert!(
                Instant::now() < deadline,
                "chromium wrote no DevToolsActivePort within {START_TIMEOUT:?}\n{}",
                process.report("running")
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let ws = WebSocket::connect(&format!("127.0.0.1:{port}"), &path)
            .unwrap_or_else(|e| panic!("DevTools WebSocket: {e}\n{}", process.report("running")));
        Browser {
            ws,
            next_id: 1,
            _process: process,
            _profile: profile,
        }
    }

    /// Calls `method` (on the tab of `session`, or the browser) and returns its
    /// result; an error carries the protocol's error message.
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        self.ws
            .send_text(&msg.to_string())
            .map_err(|e| format!("{method}: {e}"))?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("{method}: no answer within {CALL_TIMEOUT:?}"));
            }
            let text = self
                .ws
                .recv_text(left)
                .map_err(|e| format!("{method}: {e}"))?;
            let answer: Value =
                serde_json::from_str(&text).map_err(|e| format!("{method}: {e}: {text}"))?;
            if answer["id"] != id {
                continue; // An event, or an answer to an earlier call.
            }
            if let Some(error) = answer.get("error") {
                return Err(format!("{method}: {error}"));
            }
            return Ok(answer["result"].clone());
        }
    }

    /// Opens a new tab on `url`.
    ///
    /// # Panics
    /// If the browser refuses.
    pub fn open(&mut self, url: &str) -> Page<'_> {
        let target = self
            .call(None, "Target.createTarget", json!({ "url": url }))
            .expect("Target.createTarget");
        let target_id = target["targetId"].clone();
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .expect("Target.attachToTarget");
        let session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        Page {
            browser: self,
            session,
        }
    }
}

impl Page<'_> {
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let session = self.session.clone();
        self.browser.call(Some(&session), method, params)
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value.
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(e) = r.get("exceptionDetails") {
            return Err(format!("{expression}: {e}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Polls `expression` until it is truthy.
    ///
    /// # Panics
    /// After `timeout`, naming `what`.
    pub fn wait_for(&mut self, what: &str, expression: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            match self.eval(expression) {
                Ok(Value::Bool(true)) => return,
                Ok(_) | Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                other => panic!("{what}: not true within {timeout:?} ({expression}: {other:?})"),
            }
        }
    }

    /// Focuses the element `selector`, selects its text and types `text` over it.
    ///
    /// # Panics
    /// If there is no such element or the browser refuses.
    pub fn type_into(&mut self, selector: &str, text: &str) {
        let sel = Value::from(selector);
        let found = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return false; \
                 e.focus(); e.select(); return true; }})()"
            ))
            .expect("focusing");
        assert_eq!(found, Value::Bool(true), "no element {selector}");
        self.call("Input.insertText", json!({ "text": text }))
            .expect("Input.insertText");
    }

    /// Clicks the element `selector` with the mouse, at its centre.
    ///
    /// # Panics
    /// If there is no such element or the browser refuses.
    pub fn click(&mut self, selector: &str) {
        let sel = Value::from(selector);
        let at = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
                 e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
                 return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
            ))
            .expect("locating");
        let (x, y) = match (&at[0], &at[1]) {
            (Value::Number(x), Value::Number(y)) => (x.clone(), y.clone()),
            _ => panic!("no element {selector}"),
        };
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .unwrap_or_else(|e| panic!("clicking {selector}: {e}"));
        }
    }

    /// Saves a PNG of the whole page to `path`.
    ///
    /// # Panics
    /// If the browser refuses or the file cannot be written.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            )
            .expect("Page.captureScreenshot");
        let data = shot["data"].as_str().expect("screenshot data");
        let png = data_encoding::BASE64
            .decode(data.as_bytes())
            .expect("base64 screenshot");
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// A client WebSocket over plain TCP: text messages only.
#[derive(Debug)]
struct WebSocket {
    stream: TcpStream,
    mask_seed: u32,
}

impl WebSocket {
    /// Connects to `addr` and upgrades the request for `path`.
    fn connect(addr: &str, path: &str) -> io::Result<WebSocket> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(CALL_TIMEOUT))?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: {WS_KEY}\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes())?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() > 16 * 1024 {
                return Err(io::Error::other("handshake answer too long"));
            }
            stream.read_exact(&mut byte)?;
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        let accepted = head.starts_with("HTTP/1.1 101")
            && head.lines().any(|l| {
                l.split_once(':').is_some_and(|(name, value)| {
                    name.eq_ignore_ascii_case("sec-websocket-accept") && value.trim() == WS_ACCEPT
                })
            });
        if !accepted {
            return Err(io::Error::other(format!("upgrade refused: {head}")));
        }
        Ok(WebSocket {
            stream,
            mask_seed: std::process::id(),
        })
    }

    /// Sends one masked text frame.
    fn send_text(&mut self, text: &str) -> io::Result<()> {
        self.send_frame(0x1, text.as_bytes())
    }

    fn send_frame(&mut self, opcode: u8, payload: &[u8]) -> io::Result<()> {
        // Any mask will do (it protects proxies, not secrets): vary it per frame.
        self.mask_seed = self
            .mask_seed
            .wrapping_mul(1_103_515_245)
            .wrapping_add(12_345);
        let mask = self.mask_seed.to_be_bytes();
        let mut frame = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= usize::from(u16::MAX) => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame)
    }

    /// The next text message (fragments joined; pings answered), within `timeout`.
    fn recv_text(&mut self, timeout: Duration) -> io::Result<String> {
        self.stream
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head)?;
            let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0f);
            let masked = head[1] & 0x80 != 0;
            let len = match head[1] & 0x7f {
                126 => {
                    let mut b = [0u8; 2];
                    self.stream.read_exact(&mut b)?;
                    u64::from(u16::from_be_bytes(b))
                }
                127 => {
                    let mut b = [0u8; 8];
                    self.stream.read_exact(&mut b)?;
                    u64::from_be_bytes(b)
                }
                n => u64::from(n),
            };
            let len = usize::try_from(len)
                .ok()
                .filter(|n| message.len() + n <= MAX_MESSAGE)
                .ok_or_else(|| io::Error::other("message too large"))?;
            let mut mask = [0u8; 4];
            if masked {
                self.stream.read_exact(&mut mask)?;
            }
            let mut payload = vec![0u8; len];
            self.stream.read_exact(&mut payload)?;
            if masked {
                for (i, b) in payload.iter_mut().enumerate() {
                    *b ^= mask[i % 4];
                }
            }
            match opcode {
                0x0..=0x2 => {
                    message.extend_from_slice(&payload);
                    if fin {
                        return String::from_utf8(message).map_err(io::Error::other);
                    }
                }
                0x8 => return Err(io::Error::other("the browser closed the connection")),
                0x9 => self.send_frame(0xA, &payload)?,
                _ => {} // Pong or reserved: nothing to do.
            }
        }
    }
}
