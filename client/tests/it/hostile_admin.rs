//! A hostile or broken Admin, through the real binary.
//!
//! - An Admin (or a proxy) that echoes every request header in its §3 errors — message,
//!   `details`, `request_id`, percent-encoded — and answers the claim with a `200` it
//!   cannot read but that quotes the headers back: the bearer token, the console
//!   password and the webhook keys appear nowhere — not in `register`'s output, the
//!   stored registration outcome, `status`, `status --json`, `doctor`, `run`'s stderr
//!   and log file, the console's `/` and `/settings`, nor the webhook posts (plain JSON
//!   and 企业微信) — while the alert the unreadable claim raised is shown, scrubbed. The
//!   webhook receiver echoes its URL (key included) in its refusal: that text is
//!   scrubbed too.
//! - A claim answer cut off after the Admin committed it (the mock's `truncated_body`
//!   fault): a blocking `protocol_error` alert naming the task, shown by `status` (text
//!   and JSON), no further claim, and `--exit-when-idle` exits 5, not 0.
//! - A `429` with `Retry-After` on the claim: `status` (text and JSON) says claiming
//!   waits and until when.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{json, Value};

use crate::support::world::{goods_url, status_json, wait_exit, wait_until_or, World};
use cmautobuy_mock_admin::{Fault, FaultPlan, FaultTarget, RetryAfter};

const BIN: &str = env!("CARGO_BIN_EXE_cmautobuy-client");

/// The secrets of the echo test: `/` and `+` make the percent-encoded form differ.
const TOKEN: &str = "hostile/Tok+en-7f3a9c21d4";
const TOKEN_ENCODED: &str = "hostile%2FTok%2Ben-7f3a9c21d4";
const PASSWORD: &str = "console-pw-5be81f0c";
const JSON_KEY: &str = "json-hook-key-0c4f9a7e2b61d835";
const WECOM_KEY: &str = "wecom-key-93a1d7c2-4e5f-4b8a-9c0d";

fn secrets() -> [&'static str; 5] {
    [TOKEN, TOKEN_ENCODED, PASSWORD, JSON_KEY, WECOM_KEY]
}

/// Fails the test when `text` (what `what` produced) holds any secret.
fn assert_clean(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(s), "{what} holds a secret ({s}):\n{text}");
    }
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Every request header, as an echo gives them back.
fn headers_text(h: &HeaderMap) -> String {
    h.iter()
        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The echoing Admin: the claim gets a `200` whose body quotes the headers where a task
/// should be (the client cannot read it: serde quotes the value back); every other
/// request a `401` §3 envelope echoing them in the message, `details` (JSON) and
/// `request_id` (percent-encoded).
async fn echo_admin(uri: Uri, headers: HeaderMap) -> axum::response::Response {
    let text = headers_text(&headers);
    if uri.path().ends_with("/tasks/claim") {
        let body = json!({ "task": text }).to_string();
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    let map: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or(""))))
        .collect();
    let body = json!({"error": {
        "code": "UNAUTHORIZED",
        "message": format!("who are you? {text}"),
        "retryable": false,
        "request_id": percent(&text),
        "details": {"headers": map, "url_encoded": percent(&text)},
    }});
    (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// One webhook request as received.
#[derive(Clone, Debug)]
struct Hook {
    path: String,
    headers: String,
    body: String,
}

/// A webhook receiver that refuses every post echoing its URL, key included: 企业微信's
/// `errcode` with the URL in `errmsg`, a `500` for plain JSON.
async fn echo_receiver(
    axum::extract::State(hits): axum::extract::State<Arc<Mutex<Vec<Hook>>>>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    hits.lock().unwrap().push(Hook {
        path: uri.path().to_string(),
        headers: headers_text(&headers),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    if uri.path().starts_with("/wecom") {
        let answer = json!({"errcode": 93000, "errmsg": format!("invalid webhook url {uri}")});
        return (StatusCode::OK, answer.to_string()).into_response();
    }
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("no such hook {uri}"),
    )
        .into_response()
}

/// Serves `app` on 127.0.0.1:0 on `rt`; its base URL.
fn serve(rt: &tokio::runtime::Runtime, app: axum::Router) -> String {
    let l = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    rt.spawn(async move { axum::serve(l, app).await });
    url
}

/// A loopback port nothing listens on (the adb server `doctor` must not find).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn client(data: &Path, config: &Path, adb_port: u16) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(data)
        .arg("--config")
        .arg(config)
        .env("HOME", data)
        .env("RUST_LOG", "info")
        .env("ANDROID_ADB_SERVER_PORT", adb_port.to_string())
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DATA_DIR")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .env_remove("CMAUTOBUY_TOKEN")
        .env_remove("CMAUTOBUY_DEVICE")
        .env_remove("CMAUTOBUY_LOG_DIR")
        .env_remove("CMAUTOBUY_CONSOLE_PASSWORD");
    c
}

/// Everything a command printed.
fn output_of(c: &mut Command) -> (Option<i32>, String) {
    let out = c.output().unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn csrf_of(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no CSRF field: {page}"));
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// The text of every file under `dir`.
fn texts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(texts_under(&p));
        } else if let Ok(b) = std::fs::read(&p) {
            out.push((p, String::from_utf8_lossy(&b).into_owned()));
        }
    }
    out
}

#[test]
fn an_echoing_admin_never_gets_the_token_out_of_the_client() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let admin = serve(&rt, axum::Router::new().fallback(echo_admin));
    let hooks: Arc<Mutex<Vec<Hook>>> = Arc::default();
    let receiver = serve(
        &rt,
        axum::Router::new()
            .fallback(echo_receiver)
            .with_state(hooks.clone()),
    );
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            r#"admin_url = "{admin}"
token = "{TOKEN}"
console_password = "{PASSWORD}"
poll_interval_secs = 0.2

[[webhook]]
url = "{receiver}/json/hook?key={JSON_KEY}"
format = "json"

[[webhook]]
url = "{receiver}/wecom/cgi-bin/webhook/send?key={WECOM_KEY}"
format = "wecom"
"#
        ),
    )
    .unwrap();
    let adb = closed_port();

    // `register`: refused with the echo (exit 4), which it prints scrubbed.
    let (code, out) = output_of(client(&data, &config, adb).arg("register"));
    assert_eq!(code, Some(4), "{out}");
    assert_clean("register", &out);
    assert!(out.contains("***"), "the echo, scrubbed: {out}");

    // The stored outcome, as `status` and `status --json` show it.
    let (code, out) = output_of(client(&data, &config, adb).arg("status"));
    assert_eq!(code, Some(0), "{out}");
    assert_clean("status", &out);
    assert!(out.contains("registration: failed"), "{out}");
    assert!(out.contains("***"), "{out}");
    let (_, out) = output_of(client(&data, &config, adb).args(["status", "--json"]));
    assert_clean("status --json", &out);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["registration"]["error"].as_str().unwrap().contains("***"));

    // `doctor`: its registration probe gets the echo too.
    // (A phone nothing answers for: its checks fail fast; the Admin's are what matter.)
    let phone = format!("tcp:127.0.0.1:{}", closed_port());
    let (_, out) = output_of(client(&data, &config, adb).args(["doctor", "--device", &phone]));
    assert_clean("doctor", &out);
    assert!(out.contains("***"), "{out}");

    // `run` with the console: the claim's unreadable 200 raises the protocol alert.
    let stderr_file = tmp.path().join("run.stderr");
    let mut child = Killed(
        client(&data, &config, adb)
            .args(["run", "--stub-executor", "--console", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_file).unwrap())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let console = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the console URL on stdout");
        if let Some(rest) = line.strip_prefix("console: ") {
            break rest
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('/')
                .to_string();
        }
    };
    let log = || std::fs::read_to_string(&stderr_file).unwrap_or_default();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str, cookie: &str| -> (u16, String) {
        rt.block_on(async {
            let r = http
                .get(format!("{console}{path}"))
                .header(header::COOKIE, cookie)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.text().await.unwrap())
        })
    };
    let (_, login) = get("/login", "");
    let csrf = csrf_of(&login);
    let cookie = rt.block_on(async {
        let r = http
            .post(format!("{console}/login"))
            .form(&[("csrf", csrf.as_str()), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 303, "logged in");
        r.headers()[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string()
    });
    let mut page = String::new();
    wait_until_or(
        "the protocol alert on the console",
        Duration::from_secs(60),
        &mut child.0,
        log,
        || {
            let (status, p) = get("/", &cookie);
            page = p;
            status == 200 && page.contains("protocol_error")
        },
    );
    assert_clean("console /", &page);
    assert!(page.contains("***"), "the alert, scrubbed: {page}");
    let (status, settings) = get("/settings", &cookie);
    assert_eq!(status, 200);
    assert_clean("console /settings", &settings);

    // The alert reaches both webhooks, and the 企业微信 refusal (echoing the key) is
    // logged scrubbed.
    let posted = |prefix: &str| {
        hooks
            .lock()
            .unwrap()
            .iter()
            .any(|h| h.path.starts_with(prefix))
    };
    wait_until_or(
        "posts to both webhooks",
        Duration::from_secs(60),
        &mut child.0,
        log,
        || posted("/json/") && posted("/wecom/"),
    );
    wait_until_or(
        "the webhook refusal in the log",
        Duration::from_secs(60),
        &mut child.0,
        log,
        || log().contains("webhook delivery failed"),
    );
    for h in hooks.lock().unwrap().iter() {
        // The URL carries its own key by design; what was posted carries no secret.
        assert_clean("a webhook post", &format!("{} {}", h.headers, h.body));
    }
    drop(child);

    assert_clean("run's stderr", &log());
    let logs = texts_under(&data.join("logs"));
    assert!(!logs.is_empty(), "run wrote a log file");
    for (p, text) in &logs {
        assert_clean(&p.display().to_string(), text);
    }
    let (_, out) = output_of(client(&data, &config, adb).args(["status", "--json"]));
    assert_clean("status --json after run", &out);
    let v: Value = serde_json::from_str(&out).unwrap();
    let alert = v["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "protocol_error")
        .unwrap_or_else(|| panic!("the protocol alert: {v}"));
    assert!(
        alert["message"].as_str().unwrap().contains("***"),
        "{alert}"
    );
    rt.shutdown_timeout(Duration::from_secs(1));
}

fn collect(w: &World, id: &str, goods: &str) {
    w.create(json!({"id": id, "type": "collect",
        "payload": {"goods_id": goods, "goods_url": goods_url(goods)}}));
}

#[test]
fn a_claim_answer_cut_after_the_admin_committed_it_stops_claiming_with_an_alert() {
    let w = World::start("tok-cut-claim-5");
    collect(&w, "cut-1", "602938475610");
    collect(&w, "cut-2", "602938475610");
    w.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Claim,
        nth: None,
        next: Some(1),
        fault: Fault::TruncatedBody,
    })
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = w.command(data.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Not a silent exit 0: claiming is blocked by an operator alert (5).
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    let claimed: Vec<String> = ["cut-1", "cut-2"]
        .iter()
        .filter(|id| w.task(id)["task"]["status"] == "claimed")
        .map(|id| id.to_string())
        .collect();
    assert_eq!(claimed.len(), 1, "one task claimed, then no more claims");
    let stranded = &claimed[0];
    // The other task was never claimed past the alert.
    let other = if stranded == "cut-1" {
        "cut-2"
    } else {
        "cut-1"
    };
    assert_eq!(w.task(other)["task"]["status"], "pending");

    let v = status_json(data.path());
    let alert = v["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "protocol_error")
        .unwrap_or_else(|| panic!("a protocol_error alert: {v}"));
    let message = alert["message"].as_str().unwrap();
    assert!(message.contains("cut off"), "{message}");
    assert!(
        message.contains(stranded.as_str()),
        "what arrived names the task: {message}"
    );
    assert!(
        message.contains(v["client_id"].as_str().unwrap()),
        "{message}"
    );
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(data.path())
        .arg("status")
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("claiming is stopped") && text.contains("protocol_error"),
        "{text}"
    );
    w.stop();
}

#[test]
fn status_says_when_claiming_waits_on_a_retry_after() {
    let w = World::start("tok-retry-after-9");
    w.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Claim,
        nth: None,
        next: Some(1),
        fault: Fault::Status {
            status: 429,
            retry_after: Some(RetryAfter::Seconds(600)),
            code: None,
        },
    })
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("run.stderr");
    let started = chrono::Utc::now();
    let mut child = Killed(
        w.serving(data.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let why = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut v = Value::Null;
    wait_until_or(
        "the claim wait in status --json",
        Duration::from_secs(60),
        &mut child.0,
        why,
        || {
            v = status_json(data.path());
            v["claim_wait"].is_object()
        },
    );
    let cw = &v["claim_wait"];
    assert_eq!(cw["retry_after_secs"], 600, "{cw}");
    assert_eq!(cw["status"], 429, "{cw}");
    let until = chrono::DateTime::parse_from_rfc3339(cw["until"].as_str().unwrap()).unwrap();
    let ahead = (until.with_timezone(&chrono::Utc) - started).num_seconds();
    assert!(
        (590..=700).contains(&ahead),
        "until {until}: {ahead} s ahead"
    );
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(data.path())
        .arg("status")
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CLAIMING WAITS") && text.contains("Retry-After 600 s"),
        "{text}"
    );
    assert!(text.contains(cw["until"].as_str().unwrap()), "{text}");
    // Stopped by its first signal: a drain, exit 0.
    let ok = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let st = wait_exit(&mut child.0, Duration::from_secs(60), why);
    assert!(st.success(), "{st}: {}", why());
    w.stop();
}
