//! Claim throughput and latency: 32 concurrent HTTP clients on loopback against a mock
//! Admin with a pool of tasks (a file database in WAL mode, as the binary runs).
//!
//! `cargo run --release -p cmautobuy-mock-admin --example claim_bench [TASKS] [CLIENTS]`
//!
//! Prints claims/s, latency percentiles and the double-dispatch count (must be 0). Not a
//! test: the figures depend on the machine and what else runs on it.

use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let tasks: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000);
    let clients: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(32);

    let dir = std::env::temp_dir().join(format!("claim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("admin.db");
    let admin = MockAdmin::open(MockAdminConfig::file(db.to_string_lossy().to_string()))?;
    let op = admin.operator();
    for i in 0..tasks {
        op.create_task(json!({
            "type": if i % 2 == 0 { "collect" } else { "purchase" },
            "priority": (i % 5) as i64,
            "payload": {
                "goods_id": format!("{}", 700000000000u64 + i as u64),
                "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={}", 700000000000u64 + i as u64),
                "options": {"color": "黑色", "size": "L"},
                "quantity": 1, "max_price_cent": 1000
            }
        }))
        .await?;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!(
        "http://{}/api/v1/client/tasks/claim",
        listener.local_addr()?
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(admin.clone().serve(listener, async move {
        let _ = stop_rx.await;
    }));

    let profile = json!({
        "supported_types": ["collect", "purchase"],
        "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}
    });
    let started = Instant::now();
    let mut joins = Vec::new();
    for c in 0..clients {
        let url = url.clone();
        let profile = profile.clone();
        joins.push(tokio::spawn(async move {
            // One keep-alive connection per simulated client, like a real client.
            let http = reqwest::Client::new();
            let mut got: Vec<(String, Duration)> = Vec::new();
            let mut errors = 0usize;
            loop {
                let t0 = Instant::now();
                let r = http
                    .post(&url)
                    .header("X-Client-Id", format!("BENCH-{c}"))
                    .json(&profile)
                    .send()
                    .await;
                let r = match r {
                    Ok(r) => r,
                    Err(_) => {
                        errors += 1;
                        if errors > 100 {
                            break;
                        }
                        continue;
                    }
                };
                match r.status().as_u16() {
                    200 => {
                        let v: Value = r.json().await.unwrap_or(Value::Null);
                        let id = v["task"]["id"].as_str().unwrap_or("").to_string();
                        got.push((id, t0.elapsed()));
                    }
                    204 => break,
                    _ => errors += 1,
                }
            }
            (got, errors)
        }));
    }
    let mut latencies = Vec::with_capacity(tasks);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut errors = 0;
    for j in joins {
        let (got, e) = j.await?;
        errors += e;
        for (id, d) in got {
            *seen.entry(id).or_default() += 1;
            latencies.push(d);
        }
    }
    let elapsed = started.elapsed();
    let _ = stop_tx.send(());
    let _ = server.await;

    latencies.sort();
    let pct = |p: f64| -> Duration {
        if latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[i.min(latencies.len() - 1)]
    };
    let claims = latencies.len();
    let double: usize = seen.values().filter(|n| **n > 1).map(|n| n - 1).sum();
    println!("tasks            {tasks}");
    println!("clients          {clients}");
    println!("claims           {claims}");
    println!("elapsed          {:.3} s", elapsed.as_secs_f64());
    println!(
        "throughput       {:.0} claims/s",
        claims as f64 / elapsed.as_secs_f64()
    );
    println!("latency p50      {:.2} ms", pct(0.50).as_secs_f64() * 1e3);
    println!("latency p99      {:.2} ms", pct(0.99).as_secs_f64() * 1e3);
    println!(
        "latency max      {:.2} ms",
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
    println!("double dispatch  {double}");
    println!("undispatched     {}", tasks - seen.len());
    println!("errors           {errors}");
    let _ = std::fs::remove_dir_all(&dir);
    if double > 0 || seen.len() != tasks {
        anyhow::bail!("dispatch was not exactly once");
    }
    Ok(())
}
