//! The console's router, request by request (`tower::ServiceExt::oneshot`): the guard's
//! refusals (Host, Origin, method, CSRF, session), the security headers, the status
//! page's buttons and their effect in the store, the live stream, and that no served
//! byte carries the token or the password.

use std::net::SocketAddr;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use futures::StreamExt;
use tower::ServiceExt;

use super::router::router;
use super::state::{ConsoleState, ConsoleWorker};
use crate::progress::ProgressHandle;
use crate::secret::Secret;
use crate::store::Store;
use crate::store::{OutboxDraft, OutboxKind, SettingsPatch, TaskState};

pub(super) const TOKEN: &str = "tok-SECRET-0123456789";
pub(super) const HOST: &str = "127.0.0.1:9464";

pub(super) struct Fixture {
    pub _dir: tempfile::TempDir,
    pub store: Store,
    pub progress: ProgressHandle,
}

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::path_in(dir.path())).unwrap();
    store
        .save_settings(&SettingsPatch {
            name: Some("shop-1".into()),
            admin_url: Some("http://admin.test".into()),
            token: Some(Secret::new(TOKEN)),
            device: Some("emulator-5554".into()),
        })
        .unwrap();
    Fixture {
        _dir: dir,
        store,
        progress: ProgressHandle::new(),
    }
}

pub(super) fn state(f: &Fixture) -> ConsoleState {
    ConsoleState::new(
        vec![ConsoleWorker::new(
            "emulator-5554",
            f.store.clone(),
            f.progress.clone(),
            f._dir.path().join("artifacts"),
        )],
        HOST.parse::<SocketAddr>().unwrap(),
    )
}

pub(super) fn get(path: &str) -> Request<Body> {
    Request::get(path)
        .header(header::HOST, HOST)
        .body(Body::empty())
        .unwrap()
}

pub(super) fn post(path: &str, form: &str) -> Request<Body> {
    Request::post(path)
        .header(header::HOST, HOST)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form.to_string()))
        .unwrap()
}

pub(super) async fn send(
    app: &Router,
    req: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[tokio::test]
async fn pages_carry_the_security_headers() {
    let f = fixture();
    let app = router(state(&f));
    for path in ["/", "/settings", "/metrics", "/healthz", "/console.js"] {
        let (status, h, _) = send(&app, get(path)).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(h[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(h[header::REFERRER_POLICY], "same-origin");
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
    }
    let (_, _, body) = send(&app, get("/")).await;
    assert!(body.contains("<nav>") && body.contains("状态") && body.contains("Settings"));
    assert!(!body.contains("<script>"), "no inline script");
}

/// The status page shows the device backend the phone's last task used, and
/// why it fell back from the u2 server when it did.
#[tokio::test]
async fn the_status_page_shows_the_device_backend() {
    let f = fixture();
    let app = router(state(&f));
    let (_, _, body) = send(&app, get("/")).await;
    assert!(body.contains("device backend</span>: - "), "{body}");
    f.progress.set_backend("u2", None);
    let (_, _, body) = send(&app, get("/")).await;
    assert!(
        body.contains("device backend</span>: <code>u2</code>"),
        "{body}"
    );
    f.progress
        .set_backend("uiautomator", Some("the server died twice <x>".into()));
    let (_, _, body) = send(&app, get("/")).await;
    assert!(
        body.contains("<code>uiautomator</code> <span class=\"en\">(u2 fell back: the server died twice &#60;x&#62;)"),
        "{body}"
    );
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused() {
    let f = fixture();
    let app = router(state(&f));
    for host in ["evil.example:9464", "localhost:1", "192.168.1.9:9464"] {
        let req = Request::get("/")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&app, req).await.0, StatusCode::FORBIDDEN, "{host}");
    }
    let no_host = Request::get("/").body(Body::empty()).unwrap();
    assert_eq!(send(&app, no_host).await.0, StatusCode::FORBIDDEN);
    for ok in ["localhost:9464", "127.0.0.1:9464"] {
        let req = Request::get("/")
            .header(header::HOST, ok)
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&app, req).await.0, StatusCode::OK, "{ok}");
    }
    // A page elsewhere posting here (Origin of another site), even with the token.
    let st = state(&f);
    let form = format!("csrf={}&worker=0&id=1", st.csrf());
    let app = router(st);
    let mut req = post("/ack", &form);
    req.headers_mut()
        .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
    assert_eq!(send(&app, req).await.0, StatusCode::FORBIDDEN);
    // Other methods.
    let req = Request::delete("/")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, req).await.0, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn ack_needs_the_csrf_token_and_acknowledges_the_alert() {
    let f = fixture();
    let id = f
        .store
        .raise_alert(
            crate::alert::AlertKind::ProtocolError,
            Some("T-9"),
            "HTTP 200 with a bad body",
            chrono::Utc::now(),
        )
        .unwrap();
    let st = state(&f);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let (_, _, page) = send(&app, get("/")).await;
    assert!(
        page.contains("protocol_error") && page.contains("T-9"),
        "{page}"
    );
    assert!(page.contains(&format!("name=\"csrf\" value=\"{csrf}\"")));
    assert!(page.contains("claiming stopped"));
    for bad in [String::new(), "csrf=nope".into(), format!("csrf={csrf}x")] {
        let form = format!("{bad}&worker=0&id={id}");
        assert_eq!(
            send(&app, post("/ack", &form)).await.0,
            StatusCode::FORBIDDEN,
            "{bad}"
        );
    }
    assert_eq!(f.store.open_alerts().unwrap().len(), 1);
    let (status, h, _) = send(&app, post("/ack", &format!("csrf={csrf}&worker=0&id={id}"))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(h[header::LOCATION], "/");
    assert!(f.store.open_alerts().unwrap().is_empty());
    let (_, _, page) = send(&app, get("/")).await;
    assert!(
        !page.contains("protocol_error") && page.contains("claiming runs"),
        "{page}"
    );
}

#[tokio::test]
async fn retry_requeues_a_parked_outbox_item() {
    let f = fixture();
    let now = chrono::Utc::now();
    let task: cmautobuy_contract::Task = serde_json::from_value(serde_json::json!({
        "id": "T-7", "type": "collect", "version": 1,
        "payload": {"goods_id": "1", "goods_url": "u"}
    }))
    .unwrap();
    let tid = f.store.save_claimed_task(&task, "{}", now).unwrap();
    let run = f.store.start_run(tid, now).unwrap();
    let ob = f
        .store
        .record_outcome(
            run.id,
            &OutboxDraft {
                kind: OutboxKind::Result,
                remote_task_id: "T-7".into(),
                method: "POST".into(),
                path: "/api/v1/client/tasks/T-7/result".into(),
                headers: vec![],
                body: b"{}".to_vec(),
                idempotency_key: "T-7:k".into(),
                on_accept: TaskState::Succeeded,
                outcome: "succeeded".into(),
            },
            now,
        )
        .unwrap();
    f.store.outbox_park(ob, "HTTP 422 <b>bad</b>", now).unwrap();
    let st = state(&f);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let (_, _, page) = send(&app, get("/")).await;
    assert!(
        page.contains("outbox parked") && page.contains("HTTP 422 &#60;b&#62;bad&#60;/b&#62;"),
        "{page}"
    );
    assert!(!page.contains("<b>bad</b>"), "escaped");
    let (status, _, _) = send(
        &app,
        post("/outbox/retry", &format!("csrf={csrf}&worker=0&id={ob}")),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(f.store.outbox_item(ob).unwrap().state.as_str(), "pending");
    let (_, _, page) = send(&app, get("/")).await;
    assert!(!page.contains("outbox parked"), "{page}");
}

#[tokio::test]
async fn the_live_stream_emits_a_fragment_when_the_board_changes() {
    let f = fixture();
    let app = router(state(&f));
    let res = app.clone().oneshot(get("/events")).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut body = res.into_body().into_data_stream();
    let mut seen = String::new();
    // The first fragment: every section as it is (idle).
    let deadline = std::time::Duration::from_secs(20);
    tokio::time::timeout(deadline, async {
        while !seen.contains("event: fragment") {
            let chunk = body.next().await.unwrap().unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("the first fragment");
    assert!(
        seen.contains("\"id\":\"w0\"") && seen.contains("idle"),
        "{seen}"
    );
    // A task begins on the phone: a fragment with its id and step follows.
    f.progress
        .begin("T-LIVE-1", "collect", "dry_run", chrono::Utc::now());
    f.progress.step(Some("open_goods"), "open_url");
    seen.clear();
    tokio::time::timeout(deadline, async {
        while !(seen.contains("T-LIVE-1") && seen.contains("open_goods")) {
            let chunk = body.next().await.unwrap().unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("a fragment with the task");
}

#[tokio::test]
async fn with_a_password_every_page_needs_a_session() {
    let f = fixture();
    let st = state(&f).with_password(&Secret::new("hunter2-pw"));
    let csrf = st.csrf().to_string();
    let app = router(st);
    let (status, h, _) = send(&app, get("/")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(h[header::LOCATION], "/login");
    assert_eq!(send(&app, get("/healthz")).await.0, StatusCode::OK);
    let (status, _, login) = send(&app, get("/login")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(login.contains("type=\"password\"") && !login.contains("hunter2"));
    // A POST without a session is refused, token or not.
    let form = format!("csrf={csrf}&worker=0&id=1");
    assert_eq!(
        send(&app, post("/ack", &form)).await.0,
        StatusCode::FORBIDDEN
    );
    // A wrong password.
    let (status, h, body) = send(&app, post("/login", &format!("csrf={csrf}&password=nope"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(h.get(header::SET_COOKIE).is_none() && !body.contains("hunter2"));
    // The right one: an HttpOnly, SameSite=Strict session cookie.
    let (status, h, _) = send(
        &app,
        post("/login", &format!("csrf={csrf}&password=hunter2-pw")),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let cookie = h[header::SET_COOKIE].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    let mut req = get("/");
    req.headers_mut()
        .insert(header::COOKIE, pair.parse().unwrap());
    assert_eq!(send(&app, req).await.0, StatusCode::OK);
    let mut req = get("/");
    req.headers_mut()
        .insert(header::COOKIE, "cmautobuy_session=forged".parse().unwrap());
    assert_eq!(send(&app, req).await.0, StatusCode::SEE_OTHER);
}

/// 100 wrong passwords in a burst, then the right one: from the fifth wrong one every
/// login is answered 429 with `Retry-After` without its password being checked, the
/// right one included; once the lockout has passed, the right one gets in.
#[tokio::test]
async fn wrong_passwords_lock_logins_out_and_the_right_one_waits_too() {
    let f = fixture();
    let t0 = std::time::Instant::now();
    let offset = std::sync::Arc::new(std::sync::Mutex::new(std::time::Duration::ZERO));
    let clock = {
        let offset = offset.clone();
        std::sync::Arc::new(move || t0 + *offset.lock().unwrap())
    };
    let st = state(&f)
        .with_password(&Secret::new("hunter2-pw"))
        .with_login_clock(clock);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let wrong = format!("csrf={csrf}&password=wrong-guess");
    let right = format!("csrf={csrf}&password=hunter2-pw");
    let mut statuses = Vec::new();
    for _ in 0..100 {
        statuses.push(send(&app, post("/login", &wrong)).await.0);
    }
    let free = crate::console::auth::FREE_TRIES_PER_IP as usize - 1;
    assert!(
        statuses[..free]
            .iter()
            .all(|s| *s == StatusCode::UNAUTHORIZED),
        "{statuses:?}"
    );
    assert!(
        statuses[free..]
            .iter()
            .all(|s| *s == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    let (status, h, body) = send(&app, post("/login", &right)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(h.get(header::SET_COOKIE).is_none());
    let wait: u64 = h[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!(wait >= 1, "{wait}");
    assert!(body.contains("too many wrong passwords"), "{body}");
    // After the lockout the right password gets in (and clears the count).
    *offset.lock().unwrap() = std::time::Duration::from_secs(wait);
    let (status, h, _) = send(&app, post("/login", &right)).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(h.get(header::SET_COOKIE).is_some());
    assert_eq!(
        send(&app, post("/login", &wrong)).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn settings_save_locally_then_register_and_never_show_the_token() {
    let f = fixture();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let registrar: super::state::Registrar = std::sync::Arc::new(move |store: Store| {
        let tx = tx.clone();
        Box::pin(async move {
            let s = store.settings().unwrap();
            let status = crate::store::RegistrationStatus {
                state: "ok".into(),
                at: "2026-12-02T00:00:00Z".into(),
                error: None,
                rejected: false,
            };
            store.set_registration_status(&status).unwrap();
            let _ = tx.send(s.name.unwrap_or_default());
            status
        })
    });
    let st = state(&f).with_registrar(registrar);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let (status, _, page) = send(&app, get("/settings")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("value=\"shop-1\"") && page.contains("a token is saved"),
        "{page}"
    );
    assert!(!page.contains(TOKEN));
    // A name the Admin would refuse: nothing saved, the form says why.
    let long = "店".repeat(51);
    let (status, _, page) = send(
        &app,
        post(
            "/settings",
            &format!("csrf={csrf}&worker=0&name={long}&admin_url=http%3A%2F%2Fadmin.test&token=NEWTOKEN-1"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("client.name"), "{page}");
    assert!(
        !page.contains("NEWTOKEN-1"),
        "a refused token is not echoed"
    );
    assert_eq!(f.store.settings().unwrap().name.as_deref(), Some("shop-1"));
    // A good save with an empty token field keeps the token.
    let (status, h, _) = send(
        &app,
        post(
            "/settings",
            &format!("csrf={csrf}&worker=0&name=%E5%BA%97-2&admin_url=http%3A%2F%2Fadmin.test&token=&device_pick=emulator-5554&device_text=tcp%3A10.0.0.9%3A5555"),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(h[header::LOCATION], "/settings?saved=0");
    let s = f.store.settings().unwrap();
    assert_eq!(s.name.as_deref(), Some("店-2"));
    assert_eq!(s.device.as_deref(), Some("tcp:10.0.0.9:5555"));
    assert_eq!(s.token.as_ref().map(|t| t.expose()), Some(TOKEN));
    let registered = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .expect("registered")
        .unwrap();
    assert_eq!(registered, "店-2", "registration ran after the local save");
    let (_, _, page) = send(&app, get("/settings?saved=0")).await;
    assert!(
        page.contains("registered at 2026-12-02T00:00:00Z"),
        "{page}"
    );
}

#[tokio::test]
async fn no_served_byte_carries_the_token_or_the_password() {
    let f = fixture();
    f.store
        .raise_alert(
            crate::alert::AlertKind::ProtocolError,
            Some("T-1"),
            "bad body",
            chrono::Utc::now(),
        )
        .unwrap();
    f.progress
        .begin("T-2", "purchase", "dry_run", chrono::Utc::now());
    let st = state(&f);
    let app = router(st.clone());
    let mut served = Vec::new();
    for path in [
        "/",
        "/settings",
        "/metrics",
        "/healthz",
        "/console.js",
        "/console.css",
        "/login",
        "/nothing",
    ] {
        let (_, h, body) = send(&app, get(path)).await;
        served.push(format!("{h:?}{body}"));
    }
    // The live stream's first fragments.
    let res = app.clone().oneshot(get("/events")).await.unwrap();
    let mut stream = res.into_body().into_data_stream();
    let mut first = String::new();
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !first.contains("T-2") {
            first.push_str(&String::from_utf8_lossy(
                &stream.next().await.unwrap().unwrap(),
            ));
        }
    })
    .await
    .expect("the first fragment");
    served.push(first);
    // With a password: the login page and its refusal.
    let app = router(st.with_password(&Secret::new("pw-SECRET-42")));
    let csrf_form = "password=wrong";
    for req in [get("/login"), get("/"), post("/login", csrf_form)] {
        let (_, h, body) = send(&app, req).await;
        served.push(format!("{h:?}{body}"));
    }
    for s in &served {
        assert!(!s.contains(TOKEN), "the token was served: {s}");
        assert!(!s.contains("pw-SECRET-42"), "the password was served");
    }
}

#[tokio::test]
async fn a_manual_review_task_stays_until_marked_reviewed() {
    let f = fixture();
    let now = chrono::Utc::now();
    let task: cmautobuy_contract::Task = serde_json::from_value(serde_json::json!({
        "id": "T-MR", "type": "purchase", "version": 1,
        "payload": {"goods_id": "1", "goods_url": "u"}
    }))
    .unwrap();
    let tid = f.store.save_claimed_task(&task, "{}", now).unwrap();
    let run = f.store.start_run(tid, now).unwrap();
    let ob = f
        .store
        .record_outcome(
            run.id,
            &OutboxDraft {
                kind: OutboxKind::Failure,
                remote_task_id: "T-MR".into(),
                method: "POST".into(),
                path: "/api/v1/client/tasks/T-MR/failure".into(),
                headers: vec![],
                body: b"{}".to_vec(),
                idempotency_key: "T-MR:k".into(),
                on_accept: TaskState::ManualReview,
                outcome: "manual_review:INTERRUPTED_AFTER_SUBMIT".into(),
            },
            now,
        )
        .unwrap();
    f.store.outbox_mark_sending(ob, now).unwrap();
    f.store
        .outbox_accepted(
            ob,
            &crate::store::Acceptance {
                result_id: None,
                accepted_at: "2026-12-02T00:00:00Z".into(),
                response: b"{}".to_vec(),
            },
            now,
        )
        .unwrap();
    assert_eq!(f.store.task(tid).unwrap().state, TaskState::ManualReview);
    let st = state(&f);
    let csrf = st.csrf().to_string();
    let app = router(st);
    let (_, _, page) = send(&app, get("/")).await;
    assert!(page.contains(&format!("id=\"w0-review-{tid}\"")), "{page}");
    // Still there after a reload; gone once marked reviewed (CSRF checked as always).
    let (_, _, page) = send(&app, get("/")).await;
    assert!(page.contains("T-MR") && page.contains("Reviewed"), "{page}");
    let form = format!("worker=0&id={tid}");
    assert_eq!(
        send(&app, post("/review", &form)).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, _, _) = send(&app, post("/review", &format!("csrf={csrf}&{form}"))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, _, page) = send(&app, get("/")).await;
    assert!(!page.contains(&format!("id=\"w0-review-{tid}\"")), "{page}");
    // The outcome stays in the recent list.
    assert!(
        page.contains("T-MR") && page.contains("manual_review"),
        "{page}"
    );
    assert!(f.store.unreviewed_manual_review(10).unwrap().is_empty());
}
