//! A headless Chromium driven over the Chrome DevTools Protocol, for tests of the
//! admin page: [`Browser::launch`] starts `chromium --headless` (owned by a
//! [`ProcessGuard`], so killed on drop) with a throw-away profile and every
//! background service off, and connects to it; [`Page`] then loads a URL,
//! evaluates JavaScript, types (`Input.insertText`), clicks with real mouse events
//! at an element's centre (`Input.dispatchMouseEvent`) and takes screenshots of
//! laid-out pages.
//!
//! The protocol runs over one WebSocket (RFC 6455, the `tungstenite` crate) to the
//! browser endpoint that Chromium writes to `<profile>/DevToolsActivePort`. Blocking
//! I/O with timeouts; no threads.
//!
//! Chromium is told to resolve no name but loopback addresses
//! (`--host-resolver-rules`), so a test browser talks to nothing but the servers
//! of the test. This module must never point the browser at anything else.

use std::io;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::Message;
use tungstenite::protocol::WebSocketConfig;

use crate::process::ProcessGuard;

/// How long one protocol call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long Chromium may take to open its DevTools port.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest message accepted (screenshots are base64 PNGs of a few MB).
const MAX_MESSAGE: usize = 64 << 20;
/// How long a page may take to be loaded and laid out before its screenshot.
const LAYOUT_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between two looks at a page that is not laid out yet.
const LAYOUT_POLL: Duration = Duration::from_millis(50);
/// Pause between two evaluations of a condition in the page (each a DevTools call).
const EVAL_POLL: Duration = Duration::from_millis(100);

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
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // Chromium keeps its singleton socket in a folder of its own under
        // TMPDIR (`org.chromium.Chromium.*`) and leaves it behind when it is
        // killed: under the profile, it goes with the profile.
        .env("TMPDIR", profile.path());
        if running_as_root() {
            // Chromium's sandbox refuses to run as root.
            cmd.arg("--no-sandbox");
        }
        cmd.arg("about:blank");
        let process = ProcessGuard::spawn("chromium", cmd, log_dir).expect("starting chromium");
        let port_file = profile.path().join("DevToolsActivePort");
        let found = test_support::wait::poll(START_TIMEOUT, || {
            let text = std::fs::read_to_string(&port_file).unwrap_or_default();
            let mut lines = text.lines();
            let (port, path) = (lines.next()?, lines.next()?);
            Some((port.trim().to_owned(), path.trim().to_owned()))
        });
        let (port, path) = found.unwrap_or_else(|| {
            panic!(
                "chromium wrote no DevToolsActivePort within {START_TIMEOUT:?}\n{}",
                process.report("running")
            )
        });
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
        let mut last = None;
        let held = test_support::wait::poll_every(timeout, EVAL_POLL, || {
            let value = self.eval(expression);
            let held = matches!(value, Ok(Value::Bool(true)));
            last = Some(value);
            held.then_some(())
        });
        if held.is_none() {
            panic!("{what}: not true within {timeout:?} ({expression}: {last:?})");
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

    /// Waits until the page is loaded and laid out: `document.readyState` is
    /// `complete`, and its layout viewport and content have a width (Chromium's
    /// `Page.getLayoutMetrics`). A new tab can be loaded before its first layout,
    /// and Chromium refuses to capture it then ("Cannot take screenshot with 0
    /// width"). The tab is brought to the front first: a background tab need not
    /// be laid out. Polls every `LAYOUT_POLL` until `LAYOUT_TIMEOUT`.
    pub fn wait_laid_out(&mut self) -> Result<(), String> {
        self.call("Page.bringToFront", json!({}))?;
        let mut last = None;
        let laid_out = test_support::wait::poll_every(LAYOUT_TIMEOUT, LAYOUT_POLL, || {
            let ready = self.eval("document.readyState");
            let metrics = self.call("Page.getLayoutMetrics", json!({}));
            let laid_out = metrics.as_ref().is_ok_and(|m| {
                width(m, "cssLayoutViewport", "clientWidth") > 0.0
                    && width(m, "cssContentSize", "width") > 0.0
            });
            let done = laid_out && ready.as_ref().is_ok_and(|r| r == "complete");
            last = Some((ready, metrics));
            done.then_some(())
        });
        match (laid_out, last) {
            (Some(()), _) => Ok(()),
            (None, Some((ready, metrics))) => Err(format!(
                "not laid out within {LAYOUT_TIMEOUT:?}: readyState {ready:?}, \
                 layout metrics {metrics:?}"
            )),
            (None, None) => Err(format!("not laid out within {LAYOUT_TIMEOUT:?}")),
        }
    }

    /// Saves a PNG of the whole page to `path`, once it is laid out
    /// ([`Page::wait_laid_out`]).
    ///
    /// # Panics
    /// If the page is not laid out in time, the browser refuses or the file cannot
    /// be written.
    pub fn screenshot(&mut self, path: &Path) {
        self.wait_laid_out()
            .unwrap_or_else(|e| panic!("screenshot {}: {e}", path.display()));
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

/// The number at `metrics[group][field]` of a `Page.getLayoutMetrics` answer (0
/// when absent).
fn width(metrics: &Value, group: &str, field: &str) -> f64 {
    metrics[group][field].as_f64().unwrap_or(0.0)
}

/// The DevTools connection: a client WebSocket (tungstenite) over plain TCP, text
/// messages only.
#[derive(Debug)]
struct WebSocket {
    socket: tungstenite::WebSocket<TcpStream>,
}

impl WebSocket {
    /// Connects to `addr` and upgrades the request for `path`.
    fn connect(addr: &str, path: &str) -> io::Result<WebSocket> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(CALL_TIMEOUT))?;
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (socket, _response) = tungstenite::client::client_with_config(
            format!("ws://{addr}{path}"),
            stream,
            Some(config),
        )
        .map_err(|e| io::Error::other(format!("upgrade refused: {e}")))?;
        Ok(WebSocket { socket })
    }

    /// Sends one text message.
    fn send_text(&mut self, text: &str) -> io::Result<()> {
        self.socket
            .send(Message::text(text))
            .map_err(io::Error::other)
    }

    /// The next text message (pings are answered by tungstenite), within `timeout`.
    fn recv_text(&mut self, timeout: Duration) -> io::Result<String> {
        self.socket
            .get_mut()
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        loop {
            match self.socket.read() {
                Ok(Message::Text(text)) => return Ok(text.as_str().to_owned()),
                Ok(Message::Binary(bytes)) => {
                    return String::from_utf8(bytes.to_vec()).map_err(io::Error::other);
                }
                Ok(Message::Close(_)) => {
                    return Err(io::Error::other("the browser closed the connection"));
                }
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
                Err(tungstenite::Error::Io(e)) => return Err(e),
                Err(e) => return Err(io::Error::other(e)),
            }
        }
    }
}
