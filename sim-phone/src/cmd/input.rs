//! `input [SOURCE] tap X Y | swipe X1 Y1 X2 Y2 [MS] | keyevent KEY... | text TEXT`: the
//! gestures and keys that drive the app.

use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    // `input [touchscreen|...] tap x y`: skip an optional source word.
    let args: &[&str] = match args.first() {
        Some(&("touchscreen" | "touchpad" | "mouse" | "keyboard" | "dpad")) => &args[1..],
        _ => args,
    };
    if let Some(cmd @ ("tap" | "swipe" | "keyevent" | "text")) = args.first().copied() {
        if d.system().cfg.input_injection_denied {
            d.counters.inputs_refused += 1;
            return denied(cmd, e);
        }
        d.user_activity();
    }
    match args.first().copied() {
        Some("tap") => tap(d, &args[1..], e),
        Some("swipe") => swipe(d, &args[1..], e),
        Some("keyevent") => keyevent(d, &args[1..], e),
        Some("text") => text(d, &args[1..], e),
        _ => {
            e.stderr = b"Usage: input [<source>] <command> [<arg>...]\n".to_vec();
            e.code = 1;
            5
        }
    }
}

/// What Android 13's `input` (`cmd input`, `InputShellCommand` in system_server) prints
/// when the caller may not inject events — MIUI / HyperOS without "USB调试（安全设置）":
/// `ShellCommand` catches the exception, prints it to stderr and the command exits 255.
/// Nothing is delivered.
fn denied(cmd: &str, e: &mut Exec) -> u64 {
    e.stderr = format!(
        "Exception occurred while executing '{cmd}':\n\
         java.lang.SecurityException: Injecting input events requires the caller (or the source of the instrumentation, if any) to have the INJECT_EVENTS permission.\n\
         \tat com.android.server.input.InputManagerService.injectInputEventToTarget(InputManagerService.java:900)\n\
         \tat android.hardware.input.InputManager.injectInputEvent(InputManager.java:1163)\n\
         \tat com.android.server.input.InputShellCommand.onCommand(InputShellCommand.java:235)\n\
         \tat android.os.ShellCommand.exec(ShellCommand.java:38)\n"
    )
    .into_bytes();
    e.code = 255;
    20
}

/// Coordinates as `input` reads them (fractions are truncated).
fn nums(xs: &[&str]) -> Option<Vec<i32>> {
    xs.iter()
        .map(|s| s.parse::<f64>().ok().map(|f| f as i32))
        .collect()
}

fn bad(e: &mut Exec, what: &str) -> u64 {
    e.stderr = format!("Error: Invalid arguments for command: {what}\n").into_bytes();
    e.code = 1;
    5
}

fn tap(d: &mut Device, args: &[&str], e: &mut Exec) -> u64 {
    let now = d.now();
    match nums(args) {
        Some(v) if v.len() == 2 => {
            d.counters.taps += 1;
            if d.deliver_tap(v[0], v[1], now).transition {
                d.transition();
            }
            d.cost(70, 90)
        }
        _ => bad(e, "tap"),
    }
}

fn swipe(d: &mut Device, args: &[&str], e: &mut Exec) -> u64 {
    match nums(args) {
        Some(v) if v.len() == 4 || v.len() == 5 => {
            d.counters.swipes += 1;
            if d.deliver_swipe(v[0], v[1], v[2], v[3]).transition {
                d.transition();
            }
            let dur = v.get(4).copied().unwrap_or(300).clamp(0, 10_000) as u64;
            dur + 30
        }
        _ => bad(e, "swipe"),
    }
}

fn keyevent(d: &mut Device, keys: &[&str], e: &mut Exec) -> u64 {
    let mut ms = 0;
    if keys.is_empty() {
        return bad(e, "keyevent");
    }
    for k in keys {
        let code = match *k {
            "KEYCODE_BACK" => Some(4),
            "KEYCODE_HOME" => Some(3),
            "KEYCODE_MENU" => Some(82),
            "KEYCODE_APP_SWITCH" => Some(187),
            "KEYCODE_POWER" => Some(26),
            "KEYCODE_WAKEUP" => Some(224),
            "KEYCODE_SLEEP" => Some(223),
            "KEYCODE_ENTER" => Some(66),
            s => s.parse::<i32>().ok(),
        };
        let Some(code) = code else {
            e.stderr = format!("Error: Unknown keycode: {k}\n").into_bytes();
            e.code = 1;
            return ms + 5;
        };
        d.counters.keyevents += 1;
        let o = d.deliver_key(code);
        if o.transition {
            d.transition();
        }
        ms += d.cost(70, 90);
    }
    ms
}

fn text(d: &mut Device, words: &[&str], e: &mut Exec) -> u64 {
    if words.is_empty() {
        return bad(e, "text");
    }
    let t = words.join(" ");
    if !t.is_ascii() {
        // Real `input text` cannot type non-ASCII either.
        e.stderr = b"java.lang.IllegalArgumentException: Invalid characters\n".to_vec();
        e.code = 1;
        return 20;
    }
    d.deliver_text(&t.replace("%s", " "));
    60
}
