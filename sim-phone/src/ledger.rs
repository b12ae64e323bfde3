//! The order ledger: every order the simulated app created, persisted atomically.
//!
//! This is the truth end-to-end tests hold the client to ("never two orders", "never paid"),
//! so it is written before the app shows the payment sheet, with write-temp + fsync +
//! rename (+ directory fsync), and it survives a restart of the phone.
//!
//! It also numbers the orders ([`Ledger::next_order_sn`]): from the phone's seed, the
//! number of orders so far and the ledger's own salt, so two phones started with the same
//! seed never hand out the same 订单编号 (the salt is drawn once when a state file is
//! created and kept in it; an in-memory ledger has the salt its phone gives it).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
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
    /// What was paid when it differs from `total_cent` (an account that pays by itself at
    /// a 多多支付 discount): the 实付 the order pages show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_cent: Option<i64>,
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

impl Order {
    /// The amount the order pages show as 实付: what was paid, else the total.
    pub fn shown_paid_cent(&self) -> i64 {
        self.paid_cent.unwrap_or(self.total_cent)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct LedgerFile {
    schema_version: u32,
    /// This phone's order-number salt (absent in files written before it existed: such a
    /// file gets one on its next write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    order_sn_salt: Option<u64>,
    orders: Vec<Order>,
}

/// The ledger and, when it has one, the state file it lives in.
#[derive(Debug)]
pub struct Ledger {
    path: Option<PathBuf>,
    orders: Vec<Order>,
    /// Mixed into every order number (0: the numbers of a bare in-memory ledger, the same
    /// for every phone with the same seed).
    salt: u64,
}

impl Ledger {
    /// A ledger that lives only in memory (tests that do not care about restarts), salt 0
    /// until [`Ledger::set_salt`].
    pub fn in_memory() -> Ledger {
        Ledger {
            path: None,
            orders: Vec::new(),
            salt: 0,
        }
    }

    /// Open the ledger in `path`, creating an empty one if the file does not exist. A new
    /// file (or one written before salts) gets a fresh random salt, written with the
    /// ledger's first write.
    pub fn open(path: &Path) -> Result<Ledger, SimError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| SimError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let file = read_file(path)?;
        Ok(Ledger {
            path: Some(path.to_path_buf()),
            orders: file.orders,
            salt: file.order_sn_salt.unwrap_or_else(new_salt),
        })
    }

    pub fn orders(&self) -> &[Order] {
        &self.orders
    }

    /// Whether the ledger lives only in memory (no state file).
    pub fn in_memory_only(&self) -> bool {
        self.path.is_none()
    }

    /// The order-number salt.
    pub fn salt(&self) -> u64 {
        self.salt
    }

    /// Give the ledger another salt (a phone gives its in-memory ledger one from its
    /// serial, so two phones with the same seed number their orders differently).
    pub fn set_salt(&mut self, salt: u64) {
        self.salt = salt;
    }

    /// The 订单编号 of the next order placed at `now`: `yyMMdd-` (the local date) + 15
    /// digits drawn from the phone's seed, the number of orders so far and the salt —
    /// reproducible for one ledger, different between ledgers, never one already used.
    pub fn next_order_sn(&self, seed: u64, now: DateTime<FixedOffset>) -> String {
        let n = self.orders.len() as u64;
        // Salt 0 draws exactly what the phone drew before salts existed.
        let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(n) ^ self.salt);
        loop {
            let digits: u64 = rng.gen_range(0..1_000_000_000_000_000);
            let sn = format!("{}-{digits:015}", now.format("%y%m%d"));
            if !self.orders.iter().any(|o| o.order_sn == sn) {
                return sn;
            }
        }
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
            order_sn_salt: Some(self.salt),
            orders: self.orders.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|source| SimError::Json {
            path: path.clone(),
            source,
        })?;
        write_atomically(path, &bytes)
    }
}

/// A fresh salt for a new state file: random, non-zero, below 2^53 (so any JSON reader
/// keeps it exact).
fn new_salt() -> u64 {
    (rand::random::<u64>() >> 11) | 1
}

/// The salt a phone serial ("127.0.0.1:PORT") gives an in-memory ledger (FNV-1a, below
/// 2^53, non-zero).
pub fn salt_of_serial(serial: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in serial.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h >> 11) | 1
}

/// Read the orders of a state file; a missing file is an empty ledger.
pub fn read_orders(path: &Path) -> Result<Vec<Order>, SimError> {
    read_file(path).map(|f| f.orders)
}

fn read_file(path: &Path) -> Result<LedgerFile, SimError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| SimError::Json {
            path: path.to_path_buf(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LedgerFile::default()),
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
