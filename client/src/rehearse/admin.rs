//! The Admin side of a rehearsal: the bundled mock Admin started in-process (unless
//! `--admin URL` names one), and its operator API, through which the batch is seeded and
//! every task's outcome is read back.

use std::path::Path;
use std::time::Duration;

use anyhow::bail;
use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::batch::BatchTask;

/// The Admin a rehearsal runs against.
pub struct Admin {
    /// Its base URL, without a trailing `/`.
    pub url: String,
    token: String,
    http: reqwest::Client,
    /// The embedded mock: its shutdown trigger and server task.
    embedded: Option<(oneshot::Sender<()>, JoinHandle<anyhow::Result<()>>)>,
}

impl Admin {
    /// The Admin at `url`, or without one the bundled mock on a loopback port, its
    /// database in `data_dir`. `token` authenticates both the client and the operator.
    pub fn start(
        rt: &Runtime,
        url: Option<&str>,
        token: String,
        data_dir: &Path,
    ) -> anyhow::Result<Admin> {
        let (url, embedded) = match url {
            Some(u) => (u.trim_end_matches('/').to_string(), None),
            None => {
                let db = data_dir.join("mock-admin.sqlite");
                let admin = cmautobuy_mock_admin::MockAdmin::open(
                    cmautobuy_mock_admin::MockAdminConfig::file(db.to_string_lossy().to_string()),
                )?;
                let (tx, rx) = oneshot::channel::<()>();
                let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
                let addr = listener.local_addr()?;
                let handle = rt.spawn(admin.serve(listener, async move {
                    let _ = rx.await;
                }));
                (format!("http://{addr}"), Some((tx, handle)))
            }
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Admin {
            url,
            token,
            http,
            embedded,
        })
    }

    /// The token the client and the operator use.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Creates every task of `batch` through the operator API (a task without an id gets
    /// `{run_tag}-{index}`); returns each with the id the Admin stored it under.
    pub fn seed(
        &self,
        rt: &Runtime,
        batch: Vec<BatchTask>,
        run_tag: &str,
    ) -> anyhow::Result<Vec<(String, BatchTask)>> {
        let mut ids = Vec::new();
        for (i, t) in batch.into_iter().enumerate() {
            let mut body = json!({"type": t.task_type, "payload": t.payload, "priority": 0});
            let id = t.id.clone().unwrap_or_else(|| format!("{run_tag}-{i}"));
            body["id"] = Value::String(id.clone());
            if let Some(m) = &t.execution_mode {
                body["execution_mode"] = Value::String(m.clone());
            }
            let created: Value = rt.block_on(async {
                let r = self
                    .http
                    .post(format!("{}/api/v1/admin/tasks", self.url))
                    .bearer_auth(&self.token)
                    .json(&body)
                    .send()
                    .await?;
                let status = r.status();
                let v: Value = r.json().await.unwrap_or(Value::Null);
                if !status.is_success() {
                    bail!("the Admin refused task {id}: {status} {v}");
                }
                Ok(v)
            })?;
            let stored = created
                .pointer("/task/id")
                .and_then(Value::as_str)
                .unwrap_or(&id)
                .to_string();
            ids.push((stored, t));
        }
        Ok(ids)
    }

    /// Task `id` as the operator API shows it (`null` when the answer is not JSON).
    pub fn task(&self, rt: &Runtime, id: &str) -> anyhow::Result<Value> {
        rt.block_on(async {
            let r = self
                .http
                .get(format!("{}/api/v1/admin/tasks/{}", self.url, urlencode(id)))
                .bearer_auth(&self.token)
                .send()
                .await?;
            anyhow::Ok(r.json::<Value>().await.unwrap_or(Value::Null))
        })
    }

    /// Stops the embedded mock (waiting up to 5 s); nothing for an Admin of its own.
    pub fn shut_down(self, rt: &Runtime) {
        if let Some((tx, handle)) = self.embedded {
            let _ = tx.send(());
            let _ =
                rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), handle).await });
        }
    }
}

/// `s` as one URL path segment (`percent-encoding`: every byte but RFC 3986's
/// unreserved characters escaped).
fn urlencode(s: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()
}
