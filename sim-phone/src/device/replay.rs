//! Replay mode's seam in the phone: when [`Device`] holds a [`Player`], the few places that
//! would ask the simulated app ask the player instead — what the app window shows (the
//! recorded dump, byte-for-byte), where taps, swipes, keys, deep links and `cmd statusbar
//! collapse` go, the activity in front, `screencap`'s picture. The phone's own state
//! (screen, keyguard, shade, battery, …) is untouched and works as in catalog mode.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset};

use crate::app::{App, Outcome};
use crate::ledger::Order;
use crate::render;
use crate::replay::{OrderSpec, Player, Step};
use crate::system::windows::{self, WinKind};

use super::state::Device;

/// The launcher's activity (what is in front when the dump has no PDD window).
const LAUNCHER: &str = "com.miui.home/com.miui.home.launcher.Launcher";

/// Record a scenario's order in the app's ledger as the app would (order number from
/// the ledger, the account's address); its 订单编号, or `None` when the ledger
/// refused it.
fn record_order(app: &mut App, now: DateTime<FixedOffset>, o: &OrderSpec) -> Option<String> {
    let order_sn = app.ledger.next_order_sn(app.cfg.seed, now);
    let mut options = serde_json::Map::new();
    for (i, name) in o.options.iter().enumerate() {
        options.insert(
            format!("option{}", i + 1),
            serde_json::Value::String(name.clone()),
        );
    }
    let qty = i64::from(o.quantity.max(1));
    let order = Order {
        order_sn: order_sn.clone(),
        goods_id: o.goods_id.clone(),
        options,
        quantity: o.quantity,
        total_cent: o.total_cent,
        paid_cent: None,
        created_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        status: "unpaid".into(),
        payment_attempted: false,
        payment_attempts: 0,
        unit_price_cent: o.total_cent / qty,
        title: String::new(),
        ship_to: app.cfg.account.address.clone(),
    };
    match app.ledger.push(order) {
        Ok(()) => Some(order_sn),
        Err(e) => {
            tracing::warn!(error = %e, "replay: the ledger refused a scenario order");
            None
        }
    }
}

impl Device {
    /// The replay player, when the phone plays a scenario.
    pub fn replay(&self) -> Option<&Player> {
        self.replay.as_deref()
    }

    pub(crate) fn set_replay(&mut self, p: Player) {
        self.replay = Some(Box::new(p));
    }

    /// The PDD activity in front: the app's page, or in replay the current screen's
    /// (`None` when the recorded top window is not PDD's).
    pub(crate) fn pdd_activity(&self) -> Option<&str> {
        match &self.replay {
            Some(p) => p.screen().pdd_activity.as_deref(),
            None => self.app.page().map(|_| self.app.focus_activity()),
        }
    }

    /// The focused activity as `dumpsys` prints it (PDD's, or the launcher).
    pub fn focus_activity(&self) -> &str {
        match &self.replay {
            Some(_) => self.pdd_activity().unwrap_or(LAUNCHER),
            None => self.app.focus_activity(),
        }
    }

    /// Run one player action; its order (if any) goes to the ledger.
    fn replay_step(
        &mut self,
        f: impl FnOnce(&mut Player, &mut dyn FnMut(&OrderSpec) -> Option<String>) -> Step,
    ) -> Outcome {
        let now = self.now();
        let Device { replay, app, .. } = self;
        let Some(p) = replay.as_deref_mut() else {
            return Outcome::default();
        };
        let mut sink = |o: &OrderSpec| record_order(app, now, o);
        let s = f(p, &mut sink);
        Outcome {
            transition: s.changed,
        }
    }

    pub(crate) fn app_tap(&mut self, x: i32, y: i32, now: DateTime<FixedOffset>) -> Outcome {
        if self.replay.is_some() {
            return self.replay_step(|p, o| p.tap(x, y, o));
        }
        self.app.tap(x, y, now)
    }

    pub(crate) fn app_swipe(&mut self, x1: i32, y1: i32, x2: i32, y2: i32) -> Outcome {
        if self.replay.is_some() {
            return self.replay_step(|p, o| p.swipe([x1, y1], [x2, y2], o));
        }
        self.app.swipe(x1, y1, x2, y2)
    }

    /// A key the app's window receives (BACK, HOME, any other but the power keys).
    pub(crate) fn app_key(&mut self, code: i32) -> Outcome {
        if self.replay.is_some() {
            return self.replay_step(|p, o| p.key(code, o));
        }
        match code {
            3 => self.app.home_key(),
            4 => self.app.back(),
            _ => Outcome::default(),
        }
    }

    pub(crate) fn app_open_url(&mut self, url: &str) -> Result<Outcome, String> {
        if self.replay.is_some() {
            return Ok(self.replay_step(|p, o| p.open_url(url, o)));
        }
        self.app.open_url(url)
    }

    pub(crate) fn app_text(&mut self, text: &str) {
        match self.replay.as_deref_mut() {
            Some(p) => p.unscripted("text"),
            None => self.app.input_text(text),
        }
    }

    /// `cmd statusbar collapse` reached the player (always sent to it, shade or not).
    pub(crate) fn replay_collapse_shade(&mut self) -> Outcome {
        if self.replay.is_some() {
            return self.replay_step(|p, o| p.collapse_shade(o));
        }
        Outcome::default()
    }

    /// Whether the app's window is what a dump shows now (no keyguard, shade, chooser,
    /// dialog or other app focused): in replay, the recorded dump is served then.
    pub(crate) fn app_window_focused(&self) -> bool {
        let wins = self.system_windows();
        matches!(
            windows::focused(&wins).map(|w| w.kind),
            None | Some(WinKind::Pdd | WinKind::PddPopup | WinKind::Launcher)
        )
    }

    /// The recorded dump, when replay serves it now.
    pub(crate) fn replay_dump(&self) -> Option<String> {
        let p = self.replay.as_deref()?;
        self.app_window_focused().then(|| p.screen().dump.clone())
    }

    /// A dump was just served: the app's lagging totals settle one step; in replay the
    /// dump is logged and a `dumped` transition fires (only when it was the recording).
    pub(crate) fn after_dump(&mut self) -> Outcome {
        if self.replay.is_none() {
            self.app.after_dump();
            return Outcome::default();
        }
        if self.app_window_focused() {
            self.replay_step(|p, o| p.dumped(o))
        } else {
            Outcome::default()
        }
    }

    /// In replay, the recorded dump's windows split as `app_and_chrome` splits the app's:
    /// the app's window — PDD's, wherever the dump lists it (the first of several); with
    /// no PDD window the largest ([`DumpIndex::app_root`](crate::replay::DumpIndex::app_root))
    /// — and everything else, in dump order (the bars), so the phone's own screens
    /// (keyguard, chooser, …) show with the recorded bars. Never "the first root": real
    /// MIUI dumps can list the `com.miui.home` gesture bar before PDD's window.
    pub(crate) fn replay_app_windows(
        &self,
    ) -> Option<(Vec<crate::ui::Node>, Vec<crate::ui::Node>)> {
        let index = &self.replay.as_deref()?.screen().index;
        let mut chrome = index.to_ui();
        let app = match index.app_root() {
            Some(k) if k < chrome.len() => vec![chrome.remove(k)],
            _ => Vec::new(),
        };
        Some((app, chrome))
    }

    /// Nothing of the phone's own is drawn over the app (screen on, app focused, no
    /// heads-up): in replay, the recorded (or rendered) screenshot is the picture.
    fn replay_display_clean(&self) -> bool {
        self.sys.screen_on
            && self.app_window_focused()
            && !(self.sys.heads_up.is_some() && !(self.sys.shade || self.sys.locked))
    }

    /// A screen capture is being taken: logged in replay.
    pub(crate) fn replay_note_screencap(&mut self) {
        if let Some(p) = self.replay.as_deref_mut() {
            p.screencap();
        }
    }

    /// In replay, the PNG of the screen when nothing of the phone's own covers it: the
    /// recorded screenshot's bytes, or one rendered from the dump (kept per screen).
    pub(crate) fn replay_png(&mut self) -> Option<Arc<Vec<u8>>> {
        // Catalog mode pays nothing here (not even the window stack).
        if self.replay.is_none() || !self.replay_display_clean() {
            return None;
        }
        let (w, h) = (self.cfg.width.max(1) as u32, self.cfg.height.max(1) as u32);
        let p = self.replay.as_deref_mut()?;
        if let Some(b) = &p.screen().screenshot {
            return Some(Arc::new(b.clone()));
        }
        if let Some(b) = p.rendered_png() {
            return Some(b);
        }
        let screen = crate::ui::Screen {
            windows: p.screen().index.to_ui(),
        };
        let png = Arc::new(render::encode_png(&render::render(&screen, w, h)));
        p.keep_rendered_png(png.clone());
        Some(png)
    }

    /// In replay, the recorded screenshot's pixels when nothing covers the app.
    pub(crate) fn replay_picture(&self) -> Option<image::RgbImage> {
        if self.replay.is_none() || !self.replay_display_clean() {
            return None;
        }
        let b = self.replay.as_deref()?.screen().screenshot.as_ref()?;
        image::load_from_memory_with_format(b, image::ImageFormat::Png)
            .ok()
            .map(|i| i.to_rgb8())
    }
}
