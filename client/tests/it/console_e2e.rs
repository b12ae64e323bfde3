//! The web console end to end: the real `cmautobuy-client run` with
//! `--console 127.0.0.1:0` against the served mock Admin and the simulated phone.
//!
//! - `/events` (opened before the task exists) shows the task in hand and the flow's
//!   step while the phone runs it; `/` (状态) shows its outcome once it ran;
//! - 设置: a save through the page's form (with its CSRF token) reaches the Admin — the
//!   new name shows at the mock's `GET /api/v1/admin/clients` — and the page then says
//!   `registered at …`;
//! - a POST without the token, or with a foreign `Host`, changes nothing;
//! - no byte the console served carries the token.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::world::{goods_url, World};

const TOKEN: &str = "tok-SECRET-console-e2e-31";

/// `run` (until killed) with its console on a free loopback port: the child and the URL
/// it printed.
fn run_with_console(w: &World, data: &std::path::Path) -> (Child, String) {
    let mut child = w
        .serving(data)
        .args(["--console", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = loop {
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
    (child, url)
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

#[test]
fn the_console_shows_outcomes_and_its_settings_page_registers() {
    let w = World::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let (child, url) = run_with_console(&w, data.path());
    let mut child = Killed(child);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    // The live stream, opened before the task exists: the progress board's fragments
    // show the task in hand and the flow's step while the phone runs it.
    let mut events =
        w.rt.block_on(http.get(format!("{url}/events")).send())
            .unwrap();
    assert_eq!(events.status().as_u16(), 200);
    assert!(events.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    w.create(json!({"id": "con-1", "type": "collect",
        "payload": {"goods_id": "602938475610", "goods_url": goods_url("602938475610")}}));
    let mut live = String::new();
    w.rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(120), async {
            // The current-task table of a fragment rendered while con-1 was in hand
            // (the board holds it for the whole task: begin wakes the stream).
            while !(live.contains("class=\\\"current\\\"") && live.contains("<code>con-1</code>")) {
                match events.chunk().await.unwrap() {
                    Some(c) => live.push_str(&String::from_utf8_lossy(&c)),
                    None => panic!("the stream ended: {live}"),
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("con-1 and its step on the live stream: {live}"))
    });
    assert!(!live.contains(TOKEN));
    drop(events);
    let mut served: Vec<String> = Vec::new();
    let mut get = |path: &str| -> (u16, String) {
        let r =
            w.rt.block_on(http.get(format!("{url}{path}")).send())
                .unwrap();
        let status = r.status().as_u16();
        let headers = format!("{:?}", r.headers());
        let body = w.rt.block_on(r.text()).unwrap();
        served.push(format!("{headers}{body}"));
        (status, body)
    };

    // 状态: the task's outcome shows once it ran.
    let until = Instant::now() + Duration::from_secs(120);
    let page = loop {
        let (status, page) = get("/");
        assert_eq!(status, 200);
        if page.contains("con-1") && page.contains("succeeded") {
            break page;
        }
        assert!(
            Instant::now() < until,
            "con-1 succeeded on the page within 120 s: {page}"
        );
        if let Ok(Some(st)) = child.0.try_wait() {
            panic!("the client exited: {st}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        page.contains("状态") && page.contains("Recent tasks"),
        "{page}"
    );

    // 设置: save a new name through the form.
    let (status, settings) = get("/settings");
    assert_eq!(status, 200);
    let csrf = csrf_of(&settings);
    let device = w.device();
    let form = |csrf: &str, name: &str| {
        vec![
            ("csrf".to_string(), csrf.to_string()),
            ("worker".into(), "0".into()),
            ("name".into(), name.to_string()),
            ("admin_url".into(), w.url.clone()),
            ("token".into(), String::new()),
            ("device_pick".into(), device.clone()),
        ]
    };
    let post = |form: Vec<(String, String)>, host: Option<&str>| -> u16 {
        let mut req = http.post(format!("{url}/settings")).form(&form);
        if let Some(h) = host {
            req = req.header("host", h);
        }
        w.rt.block_on(req.send()).unwrap().status().as_u16()
    };
    // Without the token, or from a foreign host name: refused, nothing saved.
    assert_eq!(post(form("wrong", "坏-1"), None), 403);
    assert_eq!(post(form(&csrf, "坏-2"), Some("evil.example:80")), 403);
    assert_eq!(post(form(&csrf, "控制台-e2e"), None), 303);

    // The Admin has the new name (registration in the background, §4.1).
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let clients: Value = w.rt.block_on(w.op.clients()).unwrap();
        let names: Vec<&str> = clients["clients"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert!(!names.iter().any(|n| n.starts_with('坏')), "{clients}");
        if names.contains(&"控制台-e2e") {
            break;
        }
        assert!(
            Instant::now() < until,
            "the new name at the Admin within 60 s: {clients}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, page) = get("/settings");
        if page.contains("registered at") {
            assert!(page.contains("value=\"控制台-e2e\""), "{page}");
            break;
        }
        assert!(Instant::now() < until, "registered on the page: {page}");
        std::thread::sleep(Duration::from_millis(200));
    }

    for path in ["/metrics", "/healthz", "/console.js", "/login"] {
        get(path);
    }
    for s in &served {
        assert!(!s.contains(TOKEN), "the token was served: {s}");
    }
    drop(child);
    w.stop();
}
