//! Shared helpers for the end-to-end tests in `e2e.rs` (which span the crates): a
//! private adb server, the bundled mock Admin on loopback HTTP, and the catalog truth a
//! collect result is compared with.

use cmautobuy_sim_phone::{Catalog, Goods};
use serde_json::Value;

pub use cmautobuy_sim_phone::testing::{adb_bin, free_port, AdbServer};

/// The bundled mock Admin on a loopback port, in its own runtime thread.
pub struct Admin {
    pub url: String,
    pub rt: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Admin {
    pub fn start() -> Admin {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let admin = cmautobuy_mock_admin::MockAdmin::open(
            cmautobuy_mock_admin::MockAdminConfig::in_memory(),
        )
        .expect("mock admin");
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        rt.spawn(admin.serve(listener, async move {
            let _ = rx.await;
        }));
        Admin {
            url: format!("http://{addr}"),
            rt,
            stop: Some(tx),
        }
    }

    /// `GET /api/v1/admin/tasks/{id}` through the operator API.
    pub fn task(&self, id: &str) -> Value {
        let url = format!("{}/api/v1/admin/tasks/{id}", self.url);
        self.rt.block_on(async move {
            reqwest::get(url)
                .await
                .expect("GET task")
                .json::<Value>()
                .await
                .expect("json")
        })
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// The catalog `rehearse` runs (embedded in the client: the variant goods of
/// `fixtures/catalog/variants.json` are exercised by their own tests).
pub fn catalog() -> Catalog {
    cmautobuy_client::rehearse::embedded_catalog().expect("embedded catalog")
}

/// (options by key in page order, price in fen, available).
pub type SkuRow = (Vec<(String, String)>, Option<i64>, bool);

/// What a collect of `g` must report: every option combination in page order, its
/// availability, and the unit price read with every dimension but the size selected
/// (`null` when that combination cannot be selected because all of it is sold out).
pub fn expected_skus(g: &Goods) -> Vec<SkuRow> {
    let size = g.dimensions.iter().position(|d| d.key == "size");
    let read = size.filter(|_| g.dimensions.len() >= 2);
    g.completions(&vec![None; g.dimensions.len()])
        .iter()
        .map(|c| {
            let opts = g
                .dimensions
                .iter()
                .zip(c)
                .map(|(d, &i)| (d.key.clone(), d.options[i].name.clone()))
                .collect();
            let sel: Vec<Option<usize>> = c.iter().map(|&i| Some(i)).collect();
            let mut partial = sel.clone();
            if let Some(r) = read {
                partial[r] = None;
            }
            let price = (g.stock_of_partial(&partial) > 0).then(|| g.unit_price_cent(&sel));
            (opts, price, g.stock_of(c) > 0)
        })
        .collect()
}

/// The same rows read from a stored `pdd_data`.
pub fn actual_skus(pdd: &Value) -> Vec<SkuRow> {
    let keys: Vec<String> = pdd["dimensions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|d| d["key"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    pdd["skus"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    let opts = keys
                        .iter()
                        .filter_map(|k| {
                            s["options"][k.as_str()]
                                .as_str()
                                .map(|v| (k.clone(), v.to_string()))
                        })
                        .collect();
                    (opts, s["price_cent"].as_i64(), s["available"] == true)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The last stored result or failure of a task at the Admin: (`kind`, body).
pub fn last_result(task: &Value) -> Option<(String, Value)> {
    let r = task["results"].as_array()?.last()?;
    Some((r["kind"].as_str()?.to_string(), r["body"].clone()))
}
