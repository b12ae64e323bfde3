//! Alerts out end to end: the real `cmautobuy-client run` against the bundled mock
//! Admin and the simulated phone over ADB (support/world.rs).
//!
//! - A risk page mid-batch: the worker pauses after that task (exit 5, the next task is
//!   never claimed), and the `account_paused` alert — with the task's `manual_review` —
//!   reaches a webhook receiver in each format: plain JSON (signed), 企业微信, 钉钉
//!   (加签 in the query), 飞书 (签名 in the body); the Admin token is in none of them.
//! - `/metrics` on the console's listener: the URL printed at start, valid text
//!   exposition format, and the counts moving as tasks run (runs by outcome, outbox,
//!   device round trips); `/healthz`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::receiver::{check_exposition, sample, Receiver};
use crate::support::world::{goods_url, World};
use cmautobuy_client::notify::{dingtalk_sign, feishu_sign, json_signature};

const TOKEN: &str = "tok-SECRET-alerts-77";

fn collect(w: &World, id: &str, goods: &str) {
    w.create(json!({"id": id, "type": "collect",
        "payload": {"goods_id": goods, "goods_url": goods_url(goods)}}));
}

#[test]
fn a_risk_page_mid_batch_pauses_and_its_alert_reaches_a_webhook_in_every_format() {
    let w = World::start(TOKEN);
    let rx = w.rt.block_on(Receiver::start());
    // run-2's goods shows a risk page (the simulated phone's catalog).
    collect(&w, "run-1", "602938475610");
    collect(&w, "run-2", "693344556677");
    collect(&w, "run-3", "602938475610");
    let data = tempfile::tempdir().unwrap();
    let config = data.path().join("alerts.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[webhook]]
url = "{u}/json/hook?key=JSON-KEY"
format = "json"
secret = "json-secret"

[[webhook]]
url = "{u}/wecom/cgi-bin/webhook/send?key=WECOM-KEY"
format = "wecom"

[[webhook]]
url = "{u}/dingtalk/robot/send?access_token=DING-TOKEN"
format = "dingtalk"
secret = "SECding"

[[webhook]]
url = "{u}/feishu/open-apis/bot/v2/hook/FEISHU-HOOK"
format = "feishu"
secret = "feishu-secret"
"#,
            u = rx.url
        ),
    )
    .unwrap();
    let started = chrono::Utc::now();
    let out = w
        .command(data.path())
        .arg("--config")
        .arg(&config)
        .arg("--no-console")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(5),
        "paused for the account: {stderr}"
    );
    // The worker paused after run-2: run-3 was never claimed, so no further PDD page.
    assert!(w.task("run-3")["results"]
        .as_array()
        .is_none_or(|a| a.is_empty()));
    // The URLs' keys never reach the log.
    for key in [
        "JSON-KEY",
        "WECOM-KEY",
        "DING-TOKEN",
        "FEISHU-HOOK",
        "SECding",
    ] {
        assert!(!stderr.contains(key), "{key} in the log");
    }

    // Two events (run-2's manual_review, the account_paused alert) × four webhooks, all
    // sent before the process exited (the notifier flushes at shutdown).
    let hits = w.rt.block_on(rx.wait_for(8, Duration::from_secs(30)));
    assert_eq!(hits.len(), 8, "{hits:?}");
    for h in &hits {
        assert!(
            !h.all_text().contains(TOKEN),
            "the Admin token reached a webhook: {h:?}"
        );
    }
    let on =
        |prefix: &str| -> Vec<_> { hits.iter().filter(|h| h.path.starts_with(prefix)).collect() };
    let fresh = |secs: i64| (secs - started.timestamp()).abs() < 600;

    // Plain JSON, signed: X-Cmautobuy-Signature over "<timestamp>.<body>".
    let json_hits = on("/json/");
    assert_eq!(json_hits.len(), 2);
    let alert = json_hits
        .iter()
        .find(|h| h.json()["kind"] == "account_paused")
        .expect("the account_paused alert");
    let b = alert.json();
    assert_eq!(b["category"], "alert");
    assert_eq!(b["subject"], "run-2");
    assert!(
        b["text"].as_str().unwrap().contains("RISK_VERIFICATION"),
        "{b}"
    );
    assert_eq!(b["client"]["device"].as_str().unwrap(), w.device());
    let ts: i64 = alert
        .header("x-cmautobuy-timestamp")
        .unwrap()
        .parse()
        .unwrap();
    assert!(fresh(ts));
    assert_eq!(
        alert.header("x-cmautobuy-signature").unwrap(),
        json_signature("json-secret", ts, &alert.body)
    );
    let review = json_hits
        .iter()
        .find(|h| h.json()["kind"] == "manual_review")
        .expect("the manual_review");
    assert_eq!(review.json()["details"]["code"], "RISK_VERIFICATION");
    assert_eq!(review.json()["subject"], "run-2");

    // 企业微信: msgtype text, the key kept in the query as configured.
    for h in on("/wecom/") {
        assert_eq!(h.query_pairs()["key"], "WECOM-KEY");
        let v = h.json();
        assert_eq!(v["msgtype"], "text");
        assert!(v["text"]["content"]
            .as_str()
            .unwrap()
            .starts_with("[cmautobuy] "));
    }
    assert!(on("/wecom/").iter().any(|h| h.json()["text"]["content"]
        .as_str()
        .unwrap()
        .contains("账号暂停")));

    // 钉钉: timestamp (ms) and sign in the query; sign = Base64(HMAC(secret, "ts\nsecret")).
    for h in on("/dingtalk/") {
        let q = h.query_pairs();
        assert_eq!(q["access_token"], "DING-TOKEN");
        let ts: i64 = q["timestamp"].parse().unwrap();
        assert!(fresh(ts / 1000));
        assert_eq!(q["sign"], dingtalk_sign("SECding", ts));
        assert_eq!(h.json()["msgtype"], "text");
    }

    // 飞书: timestamp (s, a string) and sign in the body.
    for h in on("/feishu/") {
        let v = h.json();
        assert_eq!(v["msg_type"], "text");
        let ts: i64 = v["timestamp"].as_str().unwrap().parse().unwrap();
        assert!(fresh(ts));
        assert_eq!(v["sign"], feishu_sign("feishu-secret", ts));
        assert!(v["content"]["text"].as_str().unwrap().contains("run-2"));
    }

    // `status` shows the webhook queue.
    let status = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data.path())
        .arg("status")
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("webhooks:     delivered=8"), "{status}");

    // A restart while still paused: the same alert is not announced again.
    let again = w
        .command(data.path())
        .arg("--config")
        .arg(&config)
        .arg("--no-console")
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(5));
    assert_eq!(rx.hits().len(), 8, "nothing new to announce");
    w.stop();
}

/// `cmautobuy-client run` (no `--exit-when-idle`) with its console on a free loopback
/// port; the child and the URL it printed.
fn run_with_console(w: &World, data: &std::path::Path) -> (std::process::Child, String) {
    let mut child = w
        .adb_env(&mut Command::new(env!("CARGO_BIN_EXE_cmautobuy-client")))
        .arg("--data-dir")
        .arg(data)
        .args(["run", "--admin", &w.url, "--token", TOKEN])
        .args(["--poll-interval", "0.2", "--console", "127.0.0.1:0"])
        .arg("--device")
        .arg(w.device())
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ALLOW_LIVE")
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
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the console URL on stdout");
    let url = line
        .strip_prefix("console: ")
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"))
        .trim_end_matches('/')
        .to_string();
    (child, url)
}

#[test]
fn metrics_on_the_console_are_valid_exposition_and_move_as_tasks_run() {
    let w = World::start(TOKEN);
    let data = tempfile::tempdir().unwrap();
    let (mut child, url) = run_with_console(&w, data.path());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let r =
            w.rt.block_on(http.get(format!("{url}{path}")).send())
                .unwrap();
        let ct = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string());
        (r.status().as_u16(), ct, w.rt.block_on(r.text()).unwrap())
    };
    let (status, _, body) = get("/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    assert_eq!(get("/nothing").0, 404);

    let (status, ct, text) = get("/metrics");
    assert_eq!(status, 200);
    assert!(ct.unwrap().starts_with("text/plain; version=0.0.4"));
    let before = check_exposition(&text);
    let succeeded = |s: &[_]| {
        sample(
            s,
            "cmautobuy_task_runs_total",
            &[("type", "collect"), ("outcome", "succeeded"), ("code", "")],
        )
        .unwrap_or(0.0)
    };
    assert_eq!(succeeded(&before), 0.0);
    assert_eq!(
        sample(
            &before,
            "cmautobuy_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    let dumps = |s: &[_]| {
        sample(s, "cmautobuy_device_call_seconds_count", &[("op", "dump")]).unwrap_or(0.0)
    };
    let dumps_before = dumps(&before);

    collect(&w, "m-1", "602938475610");
    collect(&w, "m-2", "602938475610");
    let until = Instant::now() + Duration::from_secs(120);
    let after = loop {
        let s = check_exposition(&get("/metrics").2);
        let accepted = sample(&s, "cmautobuy_outbox_items", &[("state", "accepted")]);
        if succeeded(&s) == 2.0 && accepted == Some(2.0) {
            break s;
        }
        assert!(Instant::now() < until, "two successes within 120 s: {s:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(dumps(&after) > dumps_before, "device round trips counted");
    assert_eq!(
        sample(&after, "cmautobuy_outbox_items", &[("state", "parked")]),
        Some(0.0)
    );
    for reason in ["device", "account", "alert"] {
        assert_eq!(
            sample(&after, "cmautobuy_paused", &[("reason", reason)]),
            Some(0.0)
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    w.stop();
}

/// Without a console password the console listens on loopback only: a non-loopback
/// `--console` is a usage error (exit 2) before anything starts.
#[test]
fn a_non_loopback_console_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["run", "--console", "0.0.0.0:9464"])
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_CONSOLE_PASSWORD")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
}
