//! The phone farm view, request by request (`tower::ServiceExt::oneshot`): the grid's
//! cards (state, today's counts, the task's step trail, reasons in Chinese first, times
//! in the page's zone), the live screenshot (a cache, at most one per interval, made
//! under the phone's turn, never during a money step or with a marked run open), the
//! `step` events, the going-live settings, webhooks and the console password (every
//! POST behind the CSRF token; no URL, signing secret, token or password in a served
//! byte), and that every value is escaped exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{header, StatusCode};
use chrono::{FixedOffset, Utc};
use futures::StreamExt;
use tower::ServiceExt;

use super::router::router;
use super::router_tests::{fixture, get, post, send, state, Fixture, TOKEN};
use super::screens::PhoneScreen;
use super::state::{ConfigLive, ConsoleState};
use super::view::Zone;
use crate::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use crate::progress::PhoneTurn;
use crate::screen::Point;
use crate::store::{OutboxDraft, OutboxKind, TaskState};

/// A phone that answers screenshots with a real PNG and counts them; each screenshot
/// records whether the phone's turn was held while it was taken.
struct Camera {
    shots: AtomicUsize,
    turn: PhoneTurn,
    under_turn: Mutex<Vec<bool>>,
}

impl Camera {
    fn new(turn: PhoneTurn) -> Arc<Camera> {
        Arc::new(Camera {
            shots: AtomicUsize::new(0),
            turn,
            under_turn: Mutex::new(Vec::new()),
        })
    }
    fn shots(&self) -> usize {
        self.shots.load(Ordering::SeqCst)
    }
}

fn png() -> Vec<u8> {
    let img = image::RgbImage::from_fn(54, 120, |x, y| image::Rgb([x as u8 * 4, y as u8 * 2, 90]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

impl Device for Camera {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        Err(DeviceError::NotOnScreen)
    }
    fn tap(&self, _: Point) -> Result<(), DeviceError> {
        Ok(())
    }
    fn swipe(&self, _: Point, _: Point, _: Duration) -> Result<(), DeviceError> {
        Ok(())
    }
    fn key(&self, _: KeyCode) -> Result<(), DeviceError> {
        Ok(())
    }
    fn open_url(&self, _: &str) -> Result<(), DeviceError> {
        Ok(())
    }
    fn screenshot(&self) -> Result<Png, DeviceError> {
        self.under_turn.lock().unwrap().push(self.turn.is_held());
        self.shots.fetch_add(1, Ordering::SeqCst);
        Ok(Png {
            bytes: png(),
            width: 54,
            height: 120,
        })
    }
    fn shell(&self, _: &[&str]) -> Result<ShellOutput, DeviceError> {
        Ok(ShellOutput::default())
    }
}

/// The fixture's console with a camera on its phone taking at most one shot per `every`.
fn with_camera(f: &Fixture, every: Duration) -> (ConsoleState, Arc<Camera>) {
    let cam = Camera::new(f.progress.turn());
    let mut st = state(f);
    let w = st.workers[0]
        .clone()
        .with_screen(PhoneScreen::new(cam.clone()).every(every));
    st.workers = Arc::new(vec![w]);
    (st, cam)
}

async fn fetch_png(app: &axum::Router, i: usize) -> (StatusCode, String, Vec<u8>) {
    let res = app
        .clone()
        .oneshot(get(&format!("/phone/{i}/screen.png")))
        .await
        .unwrap();
    let status = res.status();
    let ct = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap()
        .to_vec();
    (status, ct, body)
}

#[tokio::test]
async fn a_screenshot_is_served_from_a_cache_at_most_once_per_interval_under_the_turn() {
    let f = fixture();
    let (st, cam) = with_camera(&f, Duration::from_secs(3600));
    let app = router(st);
    let (status, ct, body) = fetch_png(&app, 0).await;
    assert_eq!((status, ct.as_str()), (StatusCode::OK, "image/png"));
    assert!(body.starts_with(b"\x89PNG"));
    // Many viewers, one screenshot per interval.
    for _ in 0..5 {
        let (status, _, again) = fetch_png(&app, 0).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(again, body);
    }
    assert_eq!(cam.shots(), 1);
    assert_eq!(
        *cam.under_turn.lock().unwrap(),
        vec![true],
        "taken holding the phone's turn"
    );
    // The page shows the card with its picture and when it was taken.
    let (_, _, page) = send(&app, get("/")).await;
    assert!(
        page.contains(r#"<img class="screen" src="/phone/0/screen.png""#),
        "{page}"
    );
    assert!(page.contains("截图 "), "{page}");
    assert_eq!(fetch_png(&app, 7).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn no_screenshot_during_a_money_step_or_while_a_marked_run_is_open() {
    let f = fixture();
    let (st, cam) = with_camera(&f, Duration::ZERO);
    let app = router(st);
    let (_, _, first) = fetch_png(&app, 0).await;
    assert_eq!(cam.shots(), 1);
    // A purchase reaches its total: the last picture is served, none is taken.
    f.progress.begin("T-M", "purchase", "live", Utc::now());
    f.progress.step(Some("select_size"), "tap");
    let (status, _, body) = fetch_png(&app, 0).await;
    assert_eq!(
        (status, cam.shots()),
        (StatusCode::OK, 2),
        "not a money step yet"
    );
    f.progress.step(Some("confirm_total"), "observe");
    for _ in 0..3 {
        let (status, _, held) = fetch_png(&app, 0).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(held, body, "the last picture");
    }
    assert_eq!(cam.shots(), 2, "no screenshot during confirm_total");
    let (_, _, page) = send(&app, get("/")).await;
    assert!(page.contains("资金步骤（核对总价）中不截图"), "{page}");
    assert!(page.contains("no screenshot during a money step (confirm_total)"));
    f.progress.step(Some("submit_order"), "tap");
    fetch_png(&app, 0).await;
    assert_eq!(cam.shots(), 2);
    f.progress.clear();
    fetch_png(&app, 0).await;
    assert_eq!(cam.shots(), 3, "between tasks again");
    // A marked run without its outcome (the order is being reconciled): none either.
    let now = Utc::now();
    let task: cmautobuy_contract::Task = serde_json::from_value(serde_json::json!({
        "id": "T-MARK", "type": "purchase", "version": 1, "execution_mode": "live",
        "payload": {"goods_id": "1", "goods_url": "u"}
    }))
    .unwrap();
    let id = f.store.save_claimed_task(&task, "{}", now).unwrap();
    let run = f.store.start_run(id, now).unwrap();
    f.store.mark_irreversible_once(run.id, now, "{}").unwrap();
    fetch_png(&app, 0).await;
    assert_eq!(cam.shots(), 3);
    let (_, _, page) = send(&app, get("/")).await;
    assert!(page.contains("订单核对完成前不截图"), "{page}");
    assert!(!first.is_empty());
}

/// A screenshot request while the worker's device call holds the turn waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_waits_for_the_device_call_in_flight() {
    let f = fixture();
    let (st, cam) = with_camera(&f, Duration::ZERO);
    let app = router(st);
    let turn = f.progress.turn();
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    // "A device call": holds the turn until told.
    let call = std::thread::spawn(move || {
        let _t = turn.hold();
        held_tx.send(()).unwrap();
        release_rx.recv().unwrap();
    });
    held_rx.recv().unwrap();
    let req = tokio::spawn({
        let app = app.clone();
        async move { fetch_png(&app, 0).await }
    });
    // While the call holds the phone, no screenshot is taken (bounded poll).
    let until = std::time::Instant::now() + Duration::from_millis(300);
    while std::time::Instant::now() < until {
        assert_eq!(cam.shots(), 0, "a screenshot raced the device call");
        tokio::task::yield_now().await;
    }
    release_tx.send(()).unwrap();
    let (status, _, _) = tokio::time::timeout(Duration::from_secs(20), req)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cam.shots(), 1);
    call.join().unwrap();
}

fn report_failure(
    f: &Fixture,
    remote: &str,
    status: &str,
    code: &str,
    diagnostics: serde_json::Value,
) -> i64 {
    let now = Utc::now();
    let task: cmautobuy_contract::Task = serde_json::from_value(serde_json::json!({
        "id": remote, "type": "purchase", "version": 1, "execution_mode": "dry_run",
        "payload": {"goods_id": "1", "goods_url": "u"}
    }))
    .unwrap();
    let id = f.store.save_claimed_task(&task, "{}", now).unwrap();
    let run = f.store.start_run(id, now).unwrap();
    let body =
        serde_json::json!({"status": status, "error": {"code": code}, "diagnostics": diagnostics});
    f.store
        .record_outcome(
            run.id,
            &OutboxDraft {
                kind: OutboxKind::Failure,
                remote_task_id: remote.into(),
                method: "POST".into(),
                path: "/x".into(),
                headers: vec![],
                body: serde_json::to_vec(&body).unwrap(),
                idempotency_key: format!("{remote}:k"),
                on_accept: TaskState::Failed,
                outcome: format!("{status}:{code}"),
            },
            now,
        )
        .unwrap();
    id
}

#[tokio::test]
async fn a_card_shows_the_state_the_steps_today_and_each_reason_in_chinese_first() {
    let f = fixture();
    report_failure(
        &f,
        "T-PRICE",
        "failed",
        "PRICE_LIMIT_EXCEEDED",
        serde_json::json!({"confirmed_total_cent": 11800, "max_price_cent": 9999}),
    );
    let zone = Zone::Fixed(FixedOffset::east_opt(8 * 3600).unwrap());
    let st = state(&f).with_zone(zone);
    let app = router(st);
    let (_, _, page) = send(&app, get("/")).await;
    assert!(
        page.contains(r#"<div class="grid">"#)
            && page.contains(r#"<article class="phone" id="phone-0">"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<span class="badge idle">空闲</span>"#),
        "{page}"
    );
    // The reason, Chinese first, English beside, and the next step.
    let zh = page
        .find("订单总价 ¥118.00 超过上限 ¥99.99")
        .expect("the reason in Chinese");
    let en = page
        .find("the order total ¥118.00 is above the limit ¥99.99")
        .expect("in English");
    assert!(zh < en);
    assert!(
        page.contains("下一步：在管理端提高上限或放弃该任务"),
        "{page}"
    );
    assert!(
        page.contains(r#"<span class="bad">失败 1</span>"#),
        "today's count: {page}"
    );
    // A task in hand: working, its step in Chinese, the trail, the money step marked.
    f.progress.begin("T-NOW", "purchase", "live", Utc::now());
    f.progress.step(Some("open_goods"), "open_url");
    f.progress.step(Some("confirm_total"), "observe");
    let (_, _, page) = send(&app, get("/")).await;
    assert!(
        page.contains(r#"<span class="badge working">工作中 · 核对总价</span>"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<li class="">打开商品 <span class="en">open_goods"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<li class="money now">核对总价 <span class="en">confirm_total"#),
        "{page}"
    );
    // Times in the page's zone, the UTC instant kept.
    assert!(page.contains(r#"<time datetime=""#));
    // History: the time column and the reason.
    let (_, _, list) = send(&app, get("/history")).await;
    assert!(
        list.contains("<col class=\"time\">")
            && list.contains("时间 <span class=\"en\">claimed</span>"),
        "{list}"
    );
    assert!(list.contains("订单总价 ¥118.00 超过上限 ¥99.99"), "{list}");
}

#[tokio::test]
async fn the_stream_carries_each_step_of_the_task_in_hand() {
    let f = fixture();
    let app = router(state(&f));
    let res = app.clone().oneshot(get("/events")).await.unwrap();
    let mut body = res.into_body().into_data_stream();
    f.progress
        .begin("T-STEPS", "purchase", "dry_run", Utc::now());
    f.progress.step(Some("open_goods"), "open_url");
    let mut seen = String::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !(seen.contains("event: step") && seen.contains(r#""step":"open_goods""#)) {
            seen.push_str(&String::from_utf8_lossy(
                &body.next().await.unwrap().unwrap(),
            ));
        }
    })
    .await
    .expect("a step event");
    f.progress.step(Some("read_sku_sheet"), "observe");
    tokio::time::timeout(Duration::from_secs(20), async {
        while !seen.contains(r#""step":"read_sku_sheet""#) {
            seen.push_str(&String::from_utf8_lossy(
                &body.next().await.unwrap().unwrap(),
            ));
        }
    })
    .await
    .expect("the next step");
    assert!(
        seen.contains(r#""task":"T-STEPS""#) && seen.contains(r#""money":false"#),
        "{seen}"
    );
}

/// Text from outside (an Admin's alert message) is escaped once: markup and entities
/// show as typed, neither run nor escaped twice.
#[tokio::test]
async fn outside_text_is_escaped_exactly_once() {
    let f = fixture();
    f.store
        .raise_alert(
            crate::alert::AlertKind::ProtocolError,
            Some("T-<i>x</i>"),
            "<script>alert(1)</script> &amp; 'q' \"d\"",
            Utc::now(),
        )
        .unwrap();
    let app = router(state(&f));
    let (_, _, page) = send(&app, get("/")).await;
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(
        page.contains(
            "&#60;script&#62;alert(1)&#60;/script&#62; &#38;amp; &#39;q&#39; &#34;d&#34;"
        ),
        "{page}"
    );
    assert!(page.contains("T-&#60;i&#62;x&#60;/i&#62;"));
    // Not twice: no escaped entity is escaped again.
    assert!(
        !page.contains("&#38;#60;") && !page.contains("&amp;lt;"),
        "{page}"
    );
}

#[tokio::test]
async fn going_live_settings_are_saved_checked_and_shown_with_their_source() {
    let f = fixture();
    let registered = Arc::new(AtomicUsize::new(0));
    let registrar: super::state::Registrar = {
        let registered = registered.clone();
        Arc::new(move |store: crate::store::Store| {
            let registered = registered.clone();
            Box::pin(async move {
                registered.fetch_add(1, Ordering::SeqCst);
                let st = crate::store::RegistrationStatus {
                    state: "ok".into(),
                    at: "2026-12-02T00:00:00Z".into(),
                    error: None,
                    rejected: false,
                };
                store.set_registration_status(&st).unwrap();
                st
            })
        })
    };
    let mut st = state(&f).with_registrar(registrar);
    let w = st.workers[0].clone().with_config(ConfigLive {
        expected_address: vec!["李四".into()],
        self_test_goods_id: None,
        dry_run: false,
        allow_live: true,
    });
    st.workers = Arc::new(vec![w]);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let (_, _, page) = send(&app, get("/settings")).await;
    assert!(
        page.contains("<b>李四</b> <span class=\"source\">config.toml</span>"),
        "{page}"
    );
    let form = "worker=0&expected_address=%E5%BC%A0%E4%B8%89%0D%0A%E7%A7%91%E6%8A%80%E5%9B%AD%E8%B7%AF1%E5%8F%B7&self_test_goods_id=602938475610&purchase_mode=auto";
    // No CSRF token: refused, nothing saved.
    assert_eq!(
        send(&app, post("/settings/live", form)).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(f.store.operator_settings().unwrap().expected_address, None);
    let (status, h, _) = send(&app, post("/settings/live", &format!("csrf={csrf}&{form}"))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(h[header::LOCATION], "/settings?live=0#live-w0");
    let op = f.store.operator_settings().unwrap();
    assert_eq!(
        op.expected_address,
        Some(vec!["张三".to_string(), "科技园路1号".to_string()])
    );
    assert_eq!(op.self_test_goods_id.as_deref(), Some("602938475610"));
    assert_eq!(op.purchase_mode, None);
    tokio::time::timeout(Duration::from_secs(10), async {
        while registered.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("registered again after the save");
    let (_, _, page) = send(&app, get("/settings?live=0")).await;
    assert!(page.contains("id=\"live-saved-w0\""), "{page}");
    assert!(
        page.contains(
            "<b>张三 + 科技园路1号</b> <span class=\"source\">本页设置（取代 config.toml 的）"
        ),
        "{page}"
    );
    // A refused form keeps what was typed and saves nothing.
    let (status, _, page) = send(
        &app,
        post("/settings/live", &format!("csrf={csrf}&worker=0&expected_address=x&self_test_goods_id=12ab&purchase_mode=dry_run")),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        page.contains("商品编号无效") && page.contains("value=\"12ab\""),
        "{page}"
    );
    assert!(!f.store.operator_settings().unwrap().dry_run());
}

#[tokio::test]
async fn a_webhook_is_named_by_its_id_and_its_url_is_never_served() {
    let f = fixture();
    let st = state(&f);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let url = "https://qyapi.example/cgi-bin/webhook/send?key=WH-SECRET-KEY-7781";
    let form = format!(
        "csrf={csrf}&action=add&format=wecom&name=office&url={}",
        percent_encoding::utf8_percent_encode(url, percent_encoding::NON_ALPHANUMERIC)
    );
    assert_eq!(
        send(
            &app,
            post("/settings/webhooks", &form[form.find('&').unwrap() + 1..])
        )
        .await
        .0,
        StatusCode::FORBIDDEN
    );
    let (status, _, _) = send(&app, post("/settings/webhooks", &form)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let stored = f.store.operator_settings().unwrap().webhooks_json.unwrap();
    let hooks = crate::notify::stored_webhooks(&stored);
    assert_eq!(hooks.len(), 1);
    let id = hooks[0].id.clone();
    let mut served = Vec::new();
    let (_, _, page) = send(&app, get("/settings?webhook=1")).await;
    assert!(page.contains(&id) && page.contains("office"), "{page}");
    served.push(page);
    // The same again, and a bad one: refused, neither echoed.
    let (status, _, page) = send(&app, post("/settings/webhooks", &form)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("已存在"), "{page}");
    served.push(page);
    let bad = format!("csrf={csrf}&action=add&format=wecom&url=ftp%3A%2F%2Fx.example%2F%3Fkey%3DWH-SECRET-KEY-7781&secret=SIGN-SECRET-99");
    let (status, _, page) = send(&app, post("/settings/webhooks", &bad)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    served.push(page);
    for p in &served {
        assert!(
            !p.contains("WH-SECRET-KEY-7781") && !p.contains("SIGN-SECRET-99"),
            "{p}"
        );
    }
    // Removed.
    let (status, _, _) = send(
        &app,
        post(
            "/settings/webhooks",
            &format!("csrf={csrf}&action=remove&id={id}"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(f.store.operator_settings().unwrap().webhooks_json, None);
}

#[tokio::test]
async fn the_console_password_is_set_checked_stored_hashed_and_never_served() {
    let f = fixture();
    let st = state(&f);
    let csrf = st.csrf().to_string();
    let app = router(st.clone());
    // Too short.
    let (status, _, page) = send(
        &app,
        post(
            "/settings/password",
            &format!("csrf={csrf}&new=short&confirm=short"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("CONSOLE_PASSWORD_TOO_SHORT"), "{page}");
    // Set (no password before): the browser that set it stays logged in.
    let pw = "NEW-console-pw-314";
    let (status, h, _) = send(
        &app,
        post(
            "/settings/password",
            &format!("csrf={csrf}&new={pw}&confirm={pw}"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = h[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let phc = f
        .store
        .operator_settings()
        .unwrap()
        .console_password_hash
        .unwrap();
    assert!(phc.starts_with("$pbkdf2-sha256$") && !phc.contains(pw));
    assert!(super::auth::PasswordHash::from_phc(&phc)
        .unwrap()
        .verify(pw));
    // Another browser must log in now.
    let (status, h, _) = send(&app, get("/")).await;
    assert_eq!(
        (status, h[header::LOCATION].to_str().unwrap()),
        (StatusCode::SEE_OTHER, "/login")
    );
    let mut req = get("/settings");
    req.headers_mut()
        .insert(header::COOKIE, cookie.parse().unwrap());
    let (status, _, page) = send(&app, req).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains(pw) && !page.contains(&phc), "{page}");
    // Changing it again needs the current one.
    let mut req = post(
        "/settings/password",
        &format!("csrf={csrf}&current=wrong-one-000&new=another-pw-0001&confirm=another-pw-0001"),
    );
    req.headers_mut()
        .insert(header::COOKIE, cookie.parse().unwrap());
    assert_eq!(send(&app, req).await.0, StatusCode::UNAUTHORIZED);
    // A restart reads it from the store.
    let restarted = state(&f).with_stored_password(Some(&phc));
    let app = router(restarted);
    let (status, _, _) = send(&app, post("/login", &format!("csrf=x&password={pw}"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the CSRF token still counts");
    assert_eq!(send(&app, get("/")).await.0, StatusCode::SEE_OTHER);
    assert!(!TOKEN.is_empty());
}

/// The console with 8 phones (the several-phones layout): each store with tasks of mixed
/// outcomes today (delivered), an alert and a task in hand with its trail; `/` shows
/// every phone's card and `/history` answers. With `CMAUTOBUY_BENCH=1` it is also the
/// page-cost measurement (300 tasks a phone, 200 requests of each page, p50 / p99 / max
/// printed, not judged; BENCHMARKS.md records a run): run it with `--nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_with_8_phones_shows_every_card() {
    let bench = std::env::var_os("CMAUTOBUY_BENCH").is_some();
    let (tasks, requests) = if bench { (300, 200) } else { (12, 2) };
    let fixtures: Vec<Fixture> = (0..8).map(|_| fixture()).collect();
    for (p, f) in fixtures.iter().enumerate() {
        for i in 0..tasks {
            let remote = format!("T-{p}-{i}");
            match i % 4 {
                0 => {
                    report_failure(
                        f,
                        &remote,
                        "failed",
                        "PRICE_LIMIT_EXCEEDED",
                        serde_json::json!({"confirmed_total_cent": 11800, "max_price_cent": 9999}),
                    );
                }
                1 => {
                    report_failure(
                        f,
                        &remote,
                        "retry_wait",
                        "PAGE_NOT_RECOGNIZED",
                        serde_json::json!({}),
                    );
                }
                _ => {
                    let now = Utc::now();
                    let task: cmautobuy_contract::Task =
                        serde_json::from_value(serde_json::json!({
                            "id": remote, "type": "collect", "version": 1,
                            "payload": {"goods_id": "1", "goods_url": "u"}
                        }))
                        .unwrap();
                    let id = f.store.save_claimed_task(&task, "{}", now).unwrap();
                    let run = f.store.start_run(id, now).unwrap();
                    f.store
                        .record_outcome(
                            run.id,
                            &OutboxDraft {
                                kind: OutboxKind::Result,
                                remote_task_id: remote.clone(),
                                method: "POST".into(),
                                path: "/x".into(),
                                headers: vec![],
                                body: br#"{"pdd_data":{"goods_id":"1","price_granularity":"per_sku","dimensions":[],"skus":[]}}"#.to_vec(),
                                idempotency_key: format!("{remote}:k"),
                                on_accept: TaskState::Succeeded,
                                outcome: "succeeded".into(),
                            },
                            now,
                        )
                        .unwrap();
                }
            }
        }
        // Delivered, as a day's outcomes are (the outbox keeps them, accepted).
        for item in f.store.outbox_list(false).unwrap() {
            f.store.outbox_mark_sending(item.id, Utc::now()).unwrap();
            f.store
                .outbox_accepted(
                    item.id,
                    &crate::store::Acceptance {
                        result_id: None,
                        accepted_at: "2026-12-02T00:00:00Z".into(),
                        response: b"{}".to_vec(),
                    },
                    Utc::now(),
                )
                .unwrap();
        }
        f.store
            .raise_alert(
                crate::alert::AlertKind::DeviceAttention,
                None,
                "battery low",
                Utc::now(),
            )
            .unwrap();
        f.progress
            .begin(&format!("T-NOW-{p}"), "purchase", "live", Utc::now());
        for s in [
            "open_goods",
            "check_goods",
            "open_sku_sheet",
            "read_sku_sheet",
            "select_color",
            "select_size",
            "set_quantity",
            "confirm_total",
        ] {
            f.progress.step(Some(s), "observe");
        }
    }
    let first = state(&fixtures[0]);
    let workers: Vec<_> = fixtures
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let cam = Camera::new(f.progress.turn());
            super::state::ConsoleWorker::new(
                format!("tcp:10.0.0.{i}:5555"),
                f.store.clone(),
                f.progress.clone(),
                f._dir.path().join("artifacts"),
            )
            .with_screen(PhoneScreen::new(cam))
        })
        .collect();
    let mut st = first;
    st.workers = Arc::new(workers);
    let app = router(st);
    for path in ["/", "/history"] {
        let mut ms = Vec::new();
        for _ in 0..requests {
            let t = std::time::Instant::now();
            let (status, _, body) = send(&app, get(path)).await;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(status, StatusCode::OK);
            assert!(body.len() > 1000);
            if path == "/" {
                for i in 0..8 {
                    assert!(body.contains(&format!("tcp:10.0.0.{i}:5555")), "card {i}");
                }
            }
        }
        ms.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
        eprintln!(
            "console {path} with 8 phones ({tasks} tasks each): {requests} requests, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            at(0.5),
            at(0.99),
            ms[ms.len() - 1]
        );
    }
}

/// The new POSTs pass the guard like every other: no CSRF token, or an Origin of another
/// site, is 403 and changes nothing; the screenshot route checks the Host too.
#[tokio::test]
async fn the_new_posts_need_the_csrf_token_and_this_consoles_origin() {
    let f = fixture();
    let (st, cam) = with_camera(&f, Duration::ZERO);
    let csrf = st.csrf().to_string();
    let app = router(st);
    for (path, form) in [
        (
            "/settings/live",
            "worker=0&expected_address=x&purchase_mode=dry_run",
        ),
        (
            "/settings/webhooks",
            "action=add&format=json&url=https%3A%2F%2Fhook.example%2Fx",
        ),
        (
            "/settings/password",
            "new=0123456789ab&confirm=0123456789ab",
        ),
    ] {
        assert_eq!(
            send(&app, post(path, form)).await.0,
            StatusCode::FORBIDDEN,
            "{path}"
        );
        let mut req = post(path, &format!("csrf={csrf}&{form}"));
        req.headers_mut()
            .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert_eq!(send(&app, req).await.0, StatusCode::FORBIDDEN, "{path}");
    }
    let op = f.store.operator_settings().unwrap();
    assert_eq!(
        op,
        crate::store::OperatorSettings::default(),
        "nothing changed"
    );
    let req = axum::http::Request::get("/phone/0/screen.png")
        .header(header::HOST, "evil.example:9464")
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(send(&app, req).await.0, StatusCode::FORBIDDEN);
    assert_eq!(cam.shots(), 0);
}
