//! Shared harness: a mock Admin served on 127.0.0.1:0 over real HTTP, plus request and
//! document builders.
#![allow(dead_code)]

use cmautobuy_contract::hash;
use cmautobuy_contract::SpecCandidate;
use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig, Operator};
use serde_json::{json, Value};

pub const COLLECT_GOODS: &str = "737116531267";
pub const PURCHASE_GOODS: &str = "937122477375";

pub struct Harness {
    pub admin: MockAdmin,
    pub op: Operator,
    pub base: String,
    pub http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Harness {
    pub async fn start() -> Harness {
        Self::start_with(MockAdminConfig::in_memory()).await
    }

    pub async fn start_with(cfg: MockAdminConfig) -> Harness {
        let admin = MockAdmin::open(cfg).expect("open mock admin");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(admin.clone().serve(listener, async move {
            let _ = rx.await;
        }));
        Harness {
            op: admin.operator(),
            admin,
            base: format!("http://{addr}"),
            // No pooled connections: a fault that drops a connection must not make a
            // later request reuse (or retry on) a dead socket.
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("client"),
            stop: Some(tx),
            server: Some(server),
        }
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.server.take() {
            let _ = s.await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn create(&self, body: Value) -> String {
        let t = self.op.create_task(body).await.expect("create task");
        t["task"]["id"].as_str().expect("id").to_string()
    }

    pub async fn task(&self, id: &str) -> Value {
        self.op.get_task(id).await.expect("get task")
    }

    pub async fn register(&self, client: &str, body: &Value) -> reqwest::Response {
        self.http
            .put(self.url("/api/v1/client/registration"))
            .header("X-Client-Id", client)
            .json(body)
            .send()
            .await
            .expect("send")
    }

    pub async fn claim(&self, client: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url("/api/v1/client/tasks/claim"))
            .header("X-Client-Id", client)
            .json(body)
            .send()
            .await
            .expect("send")
    }

    /// Claims and returns the task id (panics on 204).
    pub async fn claim_id(&self, client: &str, body: &Value) -> String {
        let r = self.claim(client, body).await;
        assert_eq!(r.status(), 200, "expected a task");
        let v: Value = r.json().await.expect("json");
        v["task"]["id"].as_str().expect("id").to_string()
    }

    pub async fn submit(
        &self,
        task_id: &str,
        what: &str,
        client: &str,
        key: &str,
        body: &Value,
    ) -> reqwest::Response {
        self.http
            .post(self.url(&format!("/api/v1/client/tasks/{task_id}/{what}")))
            .header("X-Client-Id", client)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .expect("send")
    }
}

pub fn profile(types: &[&str], mode: &str) -> Value {
    json!({
        "client": {"name": ""},
        "supported_types": types,
        "device": {"address": "192.168.0.173:5555", "platform": "android", "pdd_package": "com.xunmeng.pinduoduo"},
        "capabilities": {"purchase_mode": mode, "schema_versions": [1]}
    })
}

pub fn named(name: &str, types: &[&str], mode: &str) -> Value {
    let mut p = profile(types, mode);
    p["client"]["name"] = json!(name);
    p
}

pub fn all_dry() -> Value {
    profile(&["collect", "purchase"], "dry_run")
}

pub fn all_live() -> Value {
    profile(&["collect", "purchase"], "live")
}

pub fn collect_task() -> Value {
    json!({"type": "collect", "payload": {
        "goods_id": COLLECT_GOODS,
        "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={COLLECT_GOODS}")}})
}

pub fn purchase_task(mode: &str, assigned: Option<&str>) -> Value {
    json!({"type": "purchase", "execution_mode": mode, "assigned_client": assigned, "payload": {
        "goods_id": PURCHASE_GOODS,
        "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={PURCHASE_GOODS}"),
        "options": {"color": "黑色", "size": "60公斤"},
        "quantity": 2, "max_price_cent": 4200}})
}

pub fn collect_result(attempt: &str, goods: &str, shop: Option<&str>) -> Value {
    let mut v = json!({
        "task_version": 1, "attempt_id": attempt, "result_type": "collect",
        "completed_at": "2026-08-06T08:03:00Z",
        "pdd_data": {
            "goods_id": goods, "title": "测试商品",
            "price_granularity": "color",
            "dimensions": [{"key": "color", "name": "颜色分类"}, {"key": "size", "name": "尺码"}],
            "skus": [
                {"options": {"color": "黑色", "size": "M"}, "price_cent": 470, "list_price_cent": 1990,
                 "price_observed_at": {"color": "黑色"}, "available": true, "raw_price": "折后¥4.7"},
                {"options": {"color": "白色", "size": "M"}, "price_cent": null, "list_price_cent": null,
                 "price_observed_at": {}, "available": true, "raw_price": null}
            ]
        }
    });
    if let Some(s) = shop {
        v["pdd_data"]["shop_name"] = json!(s);
    }
    v
}

pub fn dry_purchase_result(attempt: &str) -> Value {
    json!({
        "task_version": 1, "attempt_id": attempt, "result_type": "purchase",
        "completed_at": "2026-11-30T08:03:00Z",
        "purchase": {
            "schema_version": 1, "mode": "dry_run", "order_submitted": false,
            "payment_attempted": false, "payment_status": "not_created",
            "match_status": "not_applicable", "goods_id": PURCHASE_GOODS,
            "options": {"color": "黑色", "size": "60公斤"}, "quantity": 2,
            "confirmed_total_cent": 2360, "max_price_cent": 4200
        }
    })
}

pub fn failure(status: &str, attempt: &str) -> Value {
    json!({
        "task_version": 1, "attempt_id": attempt, "status": status,
        "error": {"code": "SPEC_NOT_FOUND", "message": "没有这个尺码", "retryable": false, "step": "select_size"},
        "diagnostics": {"artifact_ids": ["a-1"]},
        "reported_at": "2026-08-06T08:03:00Z"
    })
}

pub fn candidates(color: &str, sizes: &[&str]) -> Vec<SpecCandidate> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, s)| SpecCandidate {
            candidate_id: format!("c{}", i + 1),
            raw_text: s.to_string(),
            options: [
                ("color".to_string(), color.to_string()),
                ("size".to_string(), s.to_string()),
            ]
            .into_iter()
            .collect(),
        })
        .collect()
}

/// A valid §7.1 request and its deterministic key.
pub fn spec_request(task_id: &str, attempt: &str, target: &str, sizes: &[&str]) -> (Value, String) {
    let cands = candidates("黑色", sizes);
    let snapshot = hash::snapshot_hash_of(PURCHASE_GOODS, "黑色", &cands);
    let key = hash::spec_resolution_idempotency_key(task_id, attempt, &snapshot);
    let body = json!({
        "schema_version": 1,
        "task_version": 1,
        "attempt_id": attempt,
        "pdd_goods_id": PURCHASE_GOODS,
        "original_options": {"color": "黑色", "size": target},
        "selected_color": "黑色",
        "target_size": target,
        "candidates": cands,
        "candidate_snapshot_hash": snapshot,
        "observed_at": "2026-08-17T08:00:00Z"
    });
    (body, key)
}

pub async fn error_code(r: reqwest::Response) -> (u16, String, Value) {
    let status = r.status().as_u16();
    let v: Value = r.json().await.expect("envelope json");
    let code = v["error"]["code"].as_str().unwrap_or("").to_string();
    (status, code, v)
}
