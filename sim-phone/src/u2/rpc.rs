//! The server's JSON-RPC 2.0 methods (`POST /jsonrpc/0`) on the same app model as the
//! shell: a `click` reaches the window `input tap` reaches and is counted and recorded the
//! same way; `dumpWindowHierarchy` shows what `uiautomator dump` shows, in the server's
//! format (the androidx dumper's attributes, CRLF lines). Answers and errors have the
//! shapes jsonrpc4j gives them (`docs/u2-server.md`).

use image::imageops::FilterType;
use serde_json::{json, Map, Value};

use crate::cmd::screencap;
use crate::device::Device;
use crate::identity::PRODUCT;
use crate::system::windows;
use crate::ui;

use super::jpeg;

/// The error code the server's error resolver gives every Java exception.
pub const CUSTOM_ERROR_CODE: i64 = -32001;

/// Keys `pressKey` knows by name (uiautomator's `UiDevice.pressXxx` set).
const KEY_NAMES: &[(&str, i32)] = &[
    ("home", 3),
    ("back", 4),
    ("left", 21),
    ("right", 22),
    ("up", 19),
    ("down", 20),
    ("center", 23),
    ("menu", 82),
    ("search", 84),
    ("enter", 66),
    ("delete", 67),
    ("del", 67),
    ("recent", 187),
    ("volume_up", 24),
    ("volume_down", 25),
    ("volume_mute", 164),
    ("camera", 27),
    ("power", 26),
];

/// A Java exception as the server's error resolver reports it.
struct JavaError {
    class: &'static str,
    data: String,
}

enum Fail {
    Java(JavaError),
    /// jsonrpc4j's own errors: (code, message).
    Rpc(i64, &'static str),
}

/// The body of an answer: `{"jsonrpc","id","result"}` or `{"jsonrpc","id","error"}`.
fn answer(id: &Value, r: Result<Value, Fail>) -> Vec<u8> {
    let v = match r {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(Fail::Java(e)) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": CUSTOM_ERROR_CODE, "message": e.class, "data": e.data}}),
        Err(Fail::Rpc(code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": code, "message": message}}),
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The answer a server whose UiAutomation connection is gone gives to any call (issue
/// trackers: `-32001`, `java.lang.IllegalStateException`, "UiAutomation not connected!").
pub fn not_connected_answer(body: &[u8]) -> Vec<u8> {
    let id = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(Value::Null);
    answer(
        &id,
        Err(Fail::Java(JavaError {
            class: "java.lang.IllegalStateException",
            data: "java.lang.IllegalStateException: UiAutomation not connected!\n\
                   \tat android.app.UiAutomation.throwIfNotConnectedLocked(UiAutomation.java:1542)\n\
                   \tat android.app.UiAutomation.waitForIdle(UiAutomation.java:1004)\n\
                   \tat androidx.test.uiautomator.QueryController.waitForIdle(QueryController.java:380)\n"
                .to_string(),
        })),
    )
}

/// The positional parameters of a call: an array, or none (`[]`, `{}` — what Python's
/// uiautomator2 sends for a call without arguments — or absent).
fn positional(params: Option<&Value>) -> Option<Vec<Value>> {
    match params {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(a)) => Some(a.clone()),
        Some(Value::Object(o)) if o.is_empty() => Some(Vec::new()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i32> {
    v.as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .or_else(|| v.as_f64().map(|f| f as i32))
}

const BAD_PARAMS: Fail = Fail::Rpc(-32602, "method parameters invalid");

fn ints(p: &[Value], n: usize) -> Result<Vec<i32>, Fail> {
    if p.len() != n {
        return Err(BAD_PARAMS);
    }
    p.iter()
        .map(int)
        .collect::<Option<Vec<_>>>()
        .ok_or(BAD_PARAMS)
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                s.push(T[((n >> shift) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

impl Device {
    /// What the server's `dumpWindowHierarchy` returns now: the androidx dumper's shape
    /// (visible-to-user, drawing-order, hint, display-id) with CRLF line ends, whatever
    /// shape this phone's `uiautomator dump` writes. The server dumps every window root on
    /// the display (the app under a dialog, the keyboard, a heads-up, the bars), where
    /// `uiautomator dump` shows the active window and the bars. In replay mode the
    /// recorded dump is served byte for byte, as `uiautomator dump` serves it.
    pub fn u2_dump_xml(&self) -> String {
        if let Some(recorded) = self.replay_dump() {
            return recorded;
        }
        ui::to_xml(&self.display_screen(self.now())).replace('\n', "\r\n")
    }

    /// Run one `POST /jsonrpc/0` body: (answer body, simulated ms). Counted, and the
    /// phone's clock advanced, like a shell command.
    pub fn u2_jsonrpc(&mut self, body: &[u8]) -> (Vec<u8>, u64) {
        self.counters.u2_requests += 1;
        let req: Value = match serde_json::from_slice(body) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return (
                    answer(&Value::Null, Err(Fail::Rpc(-32700, "JSON parse error"))),
                    2,
                )
            }
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        let Some(method) = req.get("method").and_then(Value::as_str) else {
            return (answer(&id, Err(Fail::Rpc(-32600, "invalid request"))), 2);
        };
        let Some(params) = positional(req.get("params")) else {
            return (answer(&id, Err(BAD_PARAMS)), 2);
        };
        let (r, ms) = self.u2_call(method, &params);
        self.counters.device_time_ms += ms;
        self.tick_system();
        (answer(&id, r), ms)
    }

    fn u2_call(&mut self, method: &str, p: &[Value]) -> (Result<Value, Fail>, u64) {
        match method {
            "dumpWindowHierarchy" => {
                // (compressed, maxDepth[, rootInActive]) or (compressed): our trees are
                // shallower than any depth a client asks for.
                if p.is_empty() || p.len() > 3 || !p[0].is_boolean() {
                    return (Err(BAD_PARAMS), 2);
                }
                self.counters.u2_dumps += 1;
                let ms = self.observe_cost() + self.cost(200, 400);
                let xml = self.u2_dump_xml();
                // A lagging sheet total settles one dump at a time, whoever dumps (in
                // replay: the dump is logged and may move the player on).
                if self.after_dump().transition {
                    self.transition();
                }
                (Ok(Value::String(xml)), ms)
            }
            "click" => match p.len() {
                2 | 3 => match ints(p, p.len()) {
                    Ok(v) => self.u2_tap(v[0], v[1]),
                    Err(e) => (Err(e), 2),
                },
                _ => (Err(BAD_PARAMS), 2),
            },
            "swipe" => match ints(p, 5) {
                Ok(v) => {
                    if let Some(f) = self.u2_refused("swipe") {
                        return (Err(f), 20);
                    }
                    self.user_activity();
                    self.counters.swipes += 1;
                    if self.deliver_swipe(v[0], v[1], v[2], v[3]).transition {
                        self.transition();
                    }
                    // uiautomator throttles each step to 5 ms.
                    let ms = (v[4].clamp(1, 2000) as u64) * 5 + 10;
                    (Ok(Value::Bool(true)), ms)
                }
                Err(e) => (Err(e), 2),
            },
            "pressKey" => {
                let Some(name) = p.first().and_then(Value::as_str).filter(|_| p.len() == 1) else {
                    return (Err(BAD_PARAMS), 2);
                };
                let lower = name.to_ascii_lowercase();
                match KEY_NAMES.iter().find(|(n, _)| *n == lower) {
                    Some((_, code)) => self.u2_key(*code),
                    None => (Ok(Value::Bool(false)), 2),
                }
            }
            "pressKeyCode" => match p.len() {
                1 | 2 => match ints(p, p.len()) {
                    Ok(v) => self.u2_key(v[0]),
                    Err(e) => (Err(e), 2),
                },
                _ => (Err(BAD_PARAMS), 2),
            },
            "deviceInfo" if p.is_empty() => (Ok(self.u2_device_info()), 5),
            "takeScreenshot" => {
                // (scale, quality): the picture scaled, as a JPEG of that quality.
                if p.len() > 2 || !p.iter().all(|v| v.is_number()) {
                    return (Err(BAD_PARAMS), 2);
                }
                let scale = p.first().and_then(Value::as_f64).unwrap_or(1.0);
                let quality = p
                    .get(1)
                    .and_then(Value::as_u64)
                    .unwrap_or(100)
                    .clamp(1, 100);
                self.counters.screencaps += 1;
                self.replay_note_screencap();
                let ms = self.observe_cost() + self.cost(150, 300);
                let mut img = screencap::picture(self);
                if scale > 0.0 && scale < 1.0 {
                    let (w, h) = img.dimensions();
                    let nw = ((f64::from(w) * scale) as u32).max(1);
                    let nh = ((f64::from(h) * scale) as u32).max(1);
                    img = image::imageops::resize(&img, nw, nh, FilterType::Triangle);
                }
                let jpeg = jpeg::encode(&img, quality as u8);
                (Ok(Value::String(base64(&jpeg))), ms)
            }
            "waitForIdle" => (Ok(Value::Bool(true)), self.observe_cost() + 5),
            "deviceInfo" => (Err(BAD_PARAMS), 2),
            _ => (Err(Fail::Rpc(-32601, "method not found")), 2),
        }
    }

    /// Input through the server needs the same permission `input` needs (MIUI's
    /// "USB调试（安全设置）").
    fn u2_refused(&mut self, what: &str) -> Option<Fail> {
        if !self.system().cfg.input_injection_denied {
            return None;
        }
        self.counters.inputs_refused += 1;
        Some(Fail::Java(JavaError {
            class: "java.lang.SecurityException",
            data: format!(
                "java.lang.SecurityException: Injecting input events requires the caller (or the source of the instrumentation, if any) to have the INJECT_EVENTS permission.\n\
                 \tat android.app.UiAutomation.injectInputEvent(UiAutomation.java:1004)\n\
                 \tat androidx.test.uiautomator.InteractionController.{what}(InteractionController.java:559)\n"
            ),
        }))
    }

    fn u2_tap(&mut self, x: i32, y: i32) -> (Result<Value, Fail>, u64) {
        if let Some(f) = self.u2_refused("clickNoSync") {
            return (Err(f), 20);
        }
        self.user_activity();
        let now = self.now();
        self.counters.taps += 1;
        if self.deliver_tap(x, y, now).transition {
            self.transition();
        }
        let ms = self.cost(30, 60);
        (Ok(Value::Bool(true)), ms)
    }

    fn u2_key(&mut self, code: i32) -> (Result<Value, Fail>, u64) {
        if let Some(f) = self.u2_refused("sendKey") {
            return (Err(f), 20);
        }
        self.user_activity();
        self.counters.keyevents += 1;
        if self.deliver_key(code).transition {
            self.transition();
        }
        let ms = self.cost(30, 60);
        (Ok(Value::Bool(true)), ms)
    }

    /// `deviceInfo`: the fields of the server's `DeviceInfo` (names read in the jar).
    fn u2_device_info(&self) -> Value {
        let wins = self.system_windows();
        let package = windows::focused(&wins).map(|w| w.package).unwrap_or("");
        // 440 dpi (what `wm density` reports): dp = px * 160 / dpi.
        let dp = |px: i32| px * 160 / 440;
        let mut m = Map::new();
        m.insert("currentPackageName".into(), json!(package));
        m.insert("displayHeight".into(), json!(self.cfg.height));
        m.insert("displayRotation".into(), json!(0));
        m.insert("displaySizeDpX".into(), json!(dp(self.cfg.width)));
        m.insert("displaySizeDpY".into(), json!(dp(self.cfg.height)));
        m.insert("displayWidth".into(), json!(self.cfg.width));
        m.insert("productName".into(), json!(PRODUCT));
        m.insert("screenOn".into(), json!(self.system().screen_on));
        m.insert("sdkInt".into(), json!(33));
        m.insert("naturalOrientation".into(), json!(true));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn params_are_positional_or_none() {
        assert_eq!(positional(Some(&json!({}))), Some(vec![]));
        assert_eq!(positional(None), Some(vec![]));
        assert_eq!(
            positional(Some(&json!([1, 2]))),
            Some(vec![json!(1), json!(2)])
        );
        assert_eq!(positional(Some(&json!({"a": 1}))), None);
    }
}
