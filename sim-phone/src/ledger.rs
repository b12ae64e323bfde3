//! The order ledger: every order the simulated app created, persisted atomically.
//!
//! This is the truth end-to-end tests hold the client to ("never two orders", "never paid"),
//! so it is written before the app shows the payment sheet, with write-temp + fsync +
//! rename (+ directory fsync), and it survives a restart of the phone.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// One order as the app created it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Order {
    /// 订单编号: `yyMMdd-` + 15 digits (the date part is the local creation date).
    pub order_sn: String,
    pub goods_id: String,
    /// Dimension key → canonical option name, in page order.
    pub options: serde_json::Map<String, serde_json::Value>,
    pub quantity: u32,
    /// unit × quantity − discount, in fen.
    pub total_cent: i64,
    /// RFC 3339 with the phone's UTC offset (e.g. `2026-11-30T16:02:10+08:00`).
    pub created_at: String,
    /// "unpaid" (the simulated cashier never completes a payment), "committed_unpaid"
    /// (placed under 先用后付), "paid" (免密支付: the order button paid) or "cancelled".
    pub status: String,
    /// Whether any pay button (立即支付, 继续支付, 去支付) was ever tapped for this order.
    pub payment_attempted: bool,
    /// How many times a pay button was tapped for this order.
    #[serde(default)]
    pub payment_attempts: u32,
    #[serde(default)]
    pub unit_price_cent: i64,
    #[serde(default)]
    pub title: String,
    /// The delivery address it was placed with, as the app showed it (`None` in ledgers
    /// written before addresses were modelled).
    #[serde(default)]
    pub ship_to: Option<crate::account::Address>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct LedgerFile {
    schema_version: u32,
    orders: Vec<Order>,
}

/// The ledger and, when it has one, the state file it lives in.
#[derive(Debug)]
pub struct Ledger {
    path: Option<PathBuf>,
    orders: Vec<Order>,
}

impl Ledger {
    /// A ledger that lives only in memory (tests that do not care about restarts).
    pub fn in_memory() -> Ledger {
        Ledger {
            path: None,
            orders: Vec::new(),
        }
    }

    /// Open the ledger in `path`, creating an empty one if the file does not exist.
    pub fn open(path: &Path) -> Result<Ledger, SimError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| SimError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let orders = read_orders(path)?;
        Ok(Ledger {
            path: Some(path.to_path_buf()),
            orders,
        })
    }

    pub fn orders(&self) -> &[Order] {
        &self.orders
    }

    /// Append an order and persist; on a persistence error the order is not kept (the
    /// app then shows an error instead of a payment sheet).
    pub fn push(&mut self, order: Order) -> Result<(), SimError> {
        self.orders.push(order);
        if let Err(e) = self.persist() {
            self.orders.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Record a tap on a pay button for `order_sn`.
    pub fn record_payment_attempt(&mut self, order_sn: &str) -> Result<(), SimError> {
        if let Some(o) = self.orders.iter_mut().find(|o| o.order_sn == order_sn) {
            o.payment_attempted = true;
            o.payment_attempts += 1;
        }
        self.persist()
    }

    /// Change an order's status ("cancelled" ...).
    pub fn set_status(&mut self, order_sn: &str, status: &str) -> Result<(), SimError> {
        if let Some(o) = self.orders.iter_mut().find(|o| o.order_sn == order_sn) {
            o.status = status.to_string();
        }
        self.persist()
    }

    /// Mark an order cancelled (取消订单 in the order list/detail).
    pub fn cancel(&mut self, order_sn: &str) -> Result<(), SimError> {
        self.set_status(order_sn, "cancelled")
    }

    fn persist(&self) -> Result<(), SimError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let file = LedgerFile {
            schema_version: 1,
            orders: self.orders.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|source| SimError::Json {
            path: path.clone(),
            source,
        })?;
        write_atomically(path, &bytes)
    }
}

/// Read the orders of a state file; a missing file is an empty ledger.
pub fn read_orders(path: &Path) -> Result<Vec<Order>, SimError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let f: LedgerFile =
                serde_json::from_slice(&bytes).map_err(|source| SimError::Json {
                    path: path.to_path_buf(),
                    source,
                })?;
            Ok(f.orders)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(SimError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Write temp file in the same directory, fsync it, rename over the target, fsync the
/// directory: a crash leaves either the old or the new ledger, never a torn one.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SimError> {
    let werr = |source| SimError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp).map_err(werr)?;
        f.write_all(bytes).map_err(werr)?;
        f.sync_all().map_err(werr)?;
    }
    std::fs::rename(&tmp, path).map_err(werr)?;
    if let Ok(d) = std::fs::File::open(&dir) {
        // Directory fsync makes the rename itself durable; not every filesystem allows it.
        let _ = d.sync_all();
    }
    Ok(())
}
