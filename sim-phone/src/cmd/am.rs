//! `am start [-a ACTION] [-d URL] [-n COMPONENT] [-W] [-S] ...` (deep links and launches)
//! and `am force-stop PKG`.

use std::fmt::Write as _;

use crate::device::{Device, Exec, PDD_PACKAGE};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    match args.first().copied() {
        Some("start") | Some("start-activity") => start(d, &Start::parse(&args[1..]), e),
        Some("force-stop") => {
            if args.get(1) == Some(&PDD_PACKAGE) {
                d.app.force_stop();
            }
            80
        }
        _ => {
            e.stderr = b"Error: unknown or missing am command\n".to_vec();
            e.code = 1;
            5
        }
    }
}

/// The options of `am start` the phone understands (others are skipped with their values).
struct Start<'a> {
    action: Option<&'a str>,
    data: Option<&'a str>,
    component: Option<&'a str>,
    /// `-p PKG`: only this package may handle the intent.
    package: Option<&'a str>,
    /// `-W`: wait for the launch and report it.
    wait: bool,
    /// `-S`: force-stop the app first.
    stop_first: bool,
}

impl<'a> Start<'a> {
    fn parse(args: &[&'a str]) -> Start<'a> {
        let mut s = Start {
            action: None,
            data: None,
            component: None,
            package: None,
            wait: false,
            stop_first: false,
        };
        let mut i = 0;
        while i < args.len() {
            match args[i] {
                "-a" => {
                    s.action = args.get(i + 1).copied();
                    i += 1;
                }
                "-d" => {
                    s.data = args.get(i + 1).copied();
                    i += 1;
                }
                "-n" => {
                    s.component = args.get(i + 1).copied();
                    i += 1;
                }
                "-p" => {
                    s.package = args.get(i + 1).copied();
                    i += 1;
                }
                "-W" => s.wait = true,
                "-S" => s.stop_first = true,
                "-c" | "-t" | "-f" | "--user" => i += 1,
                "-e" | "--es" | "--ei" | "--ez" | "--el" => i += 2,
                _ => {}
            }
            i += 1;
        }
        s
    }

    /// "Intent { act=… dat=… cmp=… }" as am prints it.
    fn describe(&self) -> String {
        let mut desc = String::from("Intent {");
        if let Some(a) = self.action {
            let _ = write!(desc, " act={a}");
        }
        if let Some(d) = self.data {
            let _ = write!(desc, " dat={d}");
        }
        if let Some(p) = self.package {
            let _ = write!(desc, " pkg={p}");
        }
        if let Some(c) = self.component {
            let _ = write!(desc, " cmp={c}");
        }
        desc.push_str(" }");
        desc
    }
}

fn start(d: &mut Device, s: &Start<'_>, e: &mut Exec) -> u64 {
    d.counters.am_starts += 1;
    let desc = s.describe();
    if s.stop_first {
        d.app.force_stop();
    }
    let result = match (s.data, s.component) {
        (Some(url), _) => d.start_view(url, s.package, s.component),
        (None, Some(c)) if c.starts_with(PDD_PACKAGE) => Ok((d.app.launch(), false)),
        _ => Err("no data".to_string()),
    };
    e.stdout = format!("Starting: {desc}\n").into_bytes();
    match result {
        Ok((o, chooser)) => {
            if o.transition {
                d.transition();
            }
            if s.wait {
                let act = if chooser {
                    crate::system::windows::RESOLVER
                } else {
                    d.focus_activity()
                };
                e.stdout.extend_from_slice(
                    format!("Status: ok\nLaunchState: WARM\nActivity: {act}\nTotalTime: 412\nWaitTime: 415\nComplete\n").as_bytes(),
                );
            }
            d.cost(250, 450)
        }
        Err(_) => {
            e.stderr =
                format!("Error: Activity not started, unable to resolve {desc}\n").into_bytes();
            e.code = 1;
            60
        }
    }
}
