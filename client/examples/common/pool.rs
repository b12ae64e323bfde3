//! What the long-running benchmarks (`soak.rs`, `phones_bench.rs`) share: the task mix
//! they keep in the mock Admin's pool, the pool's open count, and a process's RSS.

use std::collections::BTreeSet;

use cmautobuy_client::rehearse::batch::{demo_batch, embedded_catalog, purchase_demo};
use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig, Operator};
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value};

/// The task templates: (kind, task) with the id filled in later.
pub fn templates() -> Result<Vec<(&'static str, Value)>, String> {
    let catalog = embedded_catalog().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for t in demo_batch(&catalog, "tpl", false) {
        out.push((
            "collect",
            task_json(&t.task_type, t.execution_mode, t.payload),
        ));
    }
    for t in purchase_demo("tpl", true, false) {
        out.push(("live", task_json(&t.task_type, t.execution_mode, t.payload)));
    }
    for t in purchase_demo("tpl", false, false) {
        out.push(("dry", task_json(&t.task_type, t.execution_mode, t.payload)));
    }
    Ok(out)
}

fn task_json(ty: &str, mode: Option<String>, payload: Value) -> Value {
    let mut v = json!({"id": "", "type": ty, "payload": payload});
    if let Some(m) = mode {
        v["execution_mode"] = json!(m);
    }
    v
}

/// 50 % collects, 25 % live purchases, 25 % dry runs.
pub fn pick<'a>(t: &'a [(&'static str, Value)], rng: &mut StdRng) -> (&'static str, &'a Value) {
    let want = match rng.gen_range(0..4) {
        0 | 1 => "collect",
        2 => "live",
        _ => "dry",
    };
    let of: Vec<&(&'static str, Value)> = t.iter().filter(|(k, _)| *k == want).collect();
    let (k, v) = of[rng.gen_range(0..of.len())];
    (k, v)
}

/// How many of the tasks `created` are still open at the Admin.
pub fn open_tasks(
    rt: &tokio::runtime::Runtime,
    op: &Operator,
    created: &[(String, &'static str)],
) -> Result<usize, String> {
    let v = rt.block_on(op.list_tasks()).map_err(|e| format!("{e:?}"))?;
    let list = v["tasks"]
        .as_array()
        .or_else(|| v.as_array())
        .cloned()
        .unwrap_or_default();
    let ours: BTreeSet<&str> = created.iter().map(|(id, _)| id.as_str()).collect();
    Ok(list
        .iter()
        .filter(|t| t["id"].as_str().is_some_and(|id| ours.contains(id)))
        .filter(|t| !is_terminal(t["status"].as_str().unwrap_or("")))
        .count())
}

/// A task status the Admin will not move on from (`pending`, `assigned` and `claimed`
/// are open).
pub fn is_terminal(status: &str) -> bool {
    matches!(
        status,
        "succeeded" | "failed" | "manual_review" | "cancelled"
    )
}

/// A process's resident set (KiB; 0 when unreadable).
pub fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// A runtime and the mock Admin served on a free loopback port with its database in
/// `out`, requiring `token`: (runtime, operator, base URL).
pub fn serve_admin(
    out: &std::path::Path,
    token: &str,
) -> Result<(tokio::runtime::Runtime, Operator, String), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut cfg = MockAdminConfig::file(out.join("admin.sqlite3").display().to_string());
    cfg.require_token = Some(token.into());
    let admin = MockAdmin::open(cfg).map_err(|e| e.to_string())?;
    let op = admin.operator();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| e.to_string())?;
    let url = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    rt.spawn(admin.serve(listener, std::future::pending()));
    Ok((rt, op, url))
}
