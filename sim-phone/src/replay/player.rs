//! The replay state machine: the current screen, and what each action the client sends
//! does to it — the first matching transition fires (and its `order`, if any, is handed to
//! the caller to record), anything else is off-script and leaves the screen as it is.
//! Every action is logged. No I/O besides the optional log file, no clock.

use std::path::Path;

use super::log::{ReplayLog, ReplayLogEntry};
use super::scenario::{
    OrderSpec, Scenario, ScreenData, Transition, Trigger, DEFAULT_SWIPE_TOLERANCE_PX,
};

/// What an action did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Step {
    /// A transition fired.
    pub fired: bool,
    /// The screen changed (a transition to another screen).
    pub changed: bool,
}

/// The player of one scenario.
#[derive(Debug)]
pub struct Player {
    scenario: Scenario,
    current: usize,
    log: ReplayLog,
    off_script: usize,
    /// Rendered screenshots of screens recorded without one (PNG), by screen index.
    rendered: std::collections::HashMap<usize, std::sync::Arc<Vec<u8>>>,
}

fn within(a: [i32; 2], b: [i32; 2], tol: u32) -> bool {
    let dx = i64::from(a[0]) - i64::from(b[0]);
    let dy = i64::from(a[1]) - i64::from(b[1]);
    let t = i64::from(tol);
    dx * dx + dy * dy <= t * t
}

impl Player {
    /// Start at the scenario's `start` screen; `log_file` receives the log as it grows.
    pub fn new(scenario: Scenario, log_file: Option<&Path>) -> std::io::Result<Player> {
        let log = match log_file {
            Some(p) => ReplayLog::to_file(p)?,
            None => ReplayLog::default(),
        };
        Ok(Player {
            current: scenario.start(),
            scenario,
            log,
            off_script: 0,
            rendered: Default::default(),
        })
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The screen on now.
    pub fn screen(&self) -> &ScreenData {
        self.scenario.screen(self.current)
    }

    pub fn screen_id(&self) -> &str {
        &self.screen().id
    }

    pub fn log(&self) -> &[ReplayLogEntry] {
        self.log.entries()
    }

    pub fn off_script_count(&self) -> usize {
        self.off_script
    }

    pub(crate) fn rendered_png(&self) -> Option<std::sync::Arc<Vec<u8>>> {
        self.rendered.get(&self.current).cloned()
    }

    pub(crate) fn keep_rendered_png(&mut self, png: std::sync::Arc<Vec<u8>>) {
        self.rendered.insert(self.current, png);
    }

    fn find(&self, f: impl Fn(&Trigger) -> bool) -> Option<Transition> {
        self.screen().on.iter().find(|t| f(&t.trigger)).cloned()
    }

    /// Fire `t` (or log off-script), recording its order through `order`.
    fn apply(
        &mut self,
        mut entry: ReplayLogEntry,
        t: Option<Transition>,
        order: &mut dyn FnMut(&OrderSpec) -> Option<String>,
    ) -> Step {
        let Some(t) = t else {
            entry.off_script = true;
            self.off_script += 1;
            self.log.push(entry);
            return Step::default();
        };
        if let Some(o) = &t.order {
            entry.order_sn = order(o);
        }
        let before = self.current;
        self.current = t.to;
        entry.to = Some(self.screen_id().to_string());
        self.log.push(entry);
        Step {
            fired: true,
            changed: before != t.to,
        }
    }

    pub fn tap(
        &mut self,
        x: i32,
        y: i32,
        order: &mut dyn FnMut(&OrderSpec) -> Option<String>,
    ) -> Step {
        let index = &self.screen().index;
        let t = self
            .screen()
            .on
            .iter()
            .find(|t| matches!(&t.trigger, Trigger::Tap(sel) if index.tap_matches(sel, x, y)))
            .cloned();
        let mut e = ReplayLogEntry::new("tap", self.screen_id());
        e.at = Some([x, y]);
        self.apply(e, t, order)
    }

    pub fn swipe(
        &mut self,
        from: [i32; 2],
        to: [i32; 2],
        order: &mut dyn FnMut(&OrderSpec) -> Option<String>,
    ) -> Step {
        let t = self.find(|t| match t {
            Trigger::Swipe(s) => {
                let tol = s.tolerance_px.unwrap_or(DEFAULT_SWIPE_TOLERANCE_PX);
                within(s.from, from, tol) && within(s.to, to, tol)
            }
            _ => false,
        });
        let mut e = ReplayLogEntry::new("swipe", self.screen_id());
        e.swipe = Some([from[0], from[1], to[0], to[1]]);
        self.apply(e, t, order)
    }

    pub fn key(&mut self, code: i32, order: &mut dyn FnMut(&OrderSpec) -> Option<String>) -> Step {
        let t = self.find(|t| *t == Trigger::Key(code));
        let mut e = ReplayLogEntry::new(if code == 4 { "back" } else { "key" }, self.screen_id());
        e.keycode = Some(code);
        self.apply(e, t, order)
    }

    /// A deep link: this screen's `url` transitions first, then the global `urls`.
    pub fn open_url(
        &mut self,
        url: &str,
        order: &mut dyn FnMut(&OrderSpec) -> Option<String>,
    ) -> Step {
        let t = self
            .find(|t| matches!(t, Trigger::Url(u) if url.contains(u.contains.as_str())))
            .or_else(|| {
                self.scenario.global_url(url).map(|to| Transition {
                    trigger: Trigger::Url(super::scenario::UrlMatch {
                        contains: String::new(),
                    }),
                    to,
                    order: None,
                })
            });
        let mut e = ReplayLogEntry::new("open_url", self.screen_id());
        e.url = Some(url.to_string());
        self.apply(e, t, order)
    }

    pub fn collapse_shade(&mut self, order: &mut dyn FnMut(&OrderSpec) -> Option<String>) -> Step {
        let t = self.find(|t| *t == Trigger::CollapseShade);
        let e = ReplayLogEntry::new("collapse_shade", self.screen_id());
        self.apply(e, t, order)
    }

    /// This screen's dump was served: logged, and a `dumped` transition fires.
    pub fn dumped(&mut self, order: &mut dyn FnMut(&OrderSpec) -> Option<String>) -> Step {
        let t = self.find(|t| *t == Trigger::Dumped);
        let mut e = ReplayLogEntry::new("dump", self.screen_id());
        match t {
            Some(t) => self.apply(e, Some(t), order),
            None => {
                e.to = Some(self.screen_id().to_string());
                self.log.push(e);
                Step::default()
            }
        }
    }

    /// A screen capture was served (logged; never a trigger).
    pub fn screencap(&mut self) {
        let mut e = ReplayLogEntry::new("screencap", self.screen_id());
        e.to = Some(self.screen_id().to_string());
        self.log.push(e);
    }

    /// An action no scenario can trigger on (`input text`): off-script.
    pub fn unscripted(&mut self, action: &str) {
        let e = ReplayLogEntry::new(action, self.screen_id());
        self.apply(e, None, &mut |_| None);
    }
}
