//! Running a command line ([`Device::run_line`]): sequences, `&&`/`||`, pipes between
//! builtins, the `/dev/null` and `2>&1` redirections and `$?`, as `/system/bin/sh -c`
//! would. Each command goes to its builtin through `cmd::run`.

use std::time::Duration;

use crate::cmd;
use crate::device::{Device, Exec};

use super::parse::{self, Join};

impl Device {
    /// Run one command line as `/system/bin/sh -c` would (see [`parse`]).
    pub fn run_line(&mut self, line: &str) -> Exec {
        let mut out = Exec::default();
        let mut ms: u64 = 0;
        let parsed = match parse::parse(line) {
            Ok(p) => p,
            Err(e) => {
                out.stderr = format!("/system/bin/sh: {e}\n").into_bytes();
                out.code = 2;
                self.counters.shell_commands += 1;
                return out;
            }
        };
        let mut status = 0;
        let mut skipping = false;
        let mut piped: Option<Vec<u8>> = None;
        let cmds = &parsed.commands;
        for (i, (join, simple)) in cmds.iter().enumerate() {
            // A pipeline is skipped (or run) as a whole: `false && a | b` runs neither.
            skipping = match join {
                Join::Pipe => skipping,
                Join::IfOk => status != 0,
                Join::IfFailed => status == 0,
                Join::Always => false,
            };
            let feeds_next = matches!(cmds.get(i + 1), Some((Join::Pipe, _)));
            if skipping {
                continue;
            }
            let stdin = if *join == Join::Pipe {
                piped.take().unwrap_or_default()
            } else {
                Vec::new()
            };
            let argv: Vec<String> = simple
                .words
                .iter()
                .map(|w| parse::render(w, status))
                .collect();
            self.counters.shell_commands += 1;
            let mut r = cmd::run(self, &argv, &stdin);
            ms += r.1;
            status = r.0.code;
            if simple.stderr_to_stdout {
                let e = std::mem::take(&mut r.0.stderr);
                r.0.stdout.extend_from_slice(&e);
            }
            if feeds_next {
                piped = Some(if simple.stdout_null {
                    Vec::new()
                } else {
                    std::mem::take(&mut r.0.stdout)
                });
            } else if !simple.stdout_null {
                out.stdout.extend_from_slice(&r.0.stdout);
            }
            if !simple.stderr_null {
                out.stderr.extend_from_slice(&r.0.stderr);
            }
            if r.0.resident.is_some() {
                out.resident = r.0.resident;
            }
            if let Some(n) = self.cfg.faults.offline_after_commands {
                if self.counters.shell_commands >= n {
                    self.offline = true;
                }
            }
            self.after_order_faults();
        }
        out.code = status;
        self.counters.device_time_ms += ms;
        self.tick_system();
        out.delay = Duration::from_millis(ms);
        out
    }

    /// The fault plan's order-triggered faults, checked after every command and every
    /// call to uiautomator2's server (the 提交订单 tap may come through either).
    pub(crate) fn after_order_faults(&mut self) {
        if let Some(n) = self.cfg.faults.screen_off_after_orders {
            if self.app.ledger().orders().len() >= n {
                self.cfg.faults.screen_off_after_orders = None;
                self.system_mut().screen_off();
            }
        }
        if let Some(n) = self.cfg.faults.offline_after_orders {
            if self.app.ledger().orders().len() >= n {
                self.cfg.faults.offline_after_orders = None;
                self.offline = true;
            }
        }
    }
}
