//! A [`FlowDevice`] over the simulated phone in-process: the same shell commands the
//! ADB device sends, run directly on [`cmautobuy_sim_phone::Device`] (no sockets).
//! The flow tests' scripted device: deterministic, fast, and its dumps are the shapes
//! the real app produces. End-to-end tests use the real ADB transport instead.

use cmautobuy_sim_phone::Device;

use super::driver::{DeviceFailure, FlowDevice};
use crate::screen::Point;

/// Quotes one argument for `/system/bin/sh` (single quotes; `'` as `'\''`). Deep links
/// come from the network: they must reach `am` as one literal word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The simulated phone, driven by command lines.
pub struct SimFlowDevice {
    pub device: Device,
}

impl SimFlowDevice {
    pub fn new(device: Device) -> Self {
        SimFlowDevice { device }
    }

    fn run(&mut self, line: &str) -> Result<Vec<u8>, DeviceFailure> {
        let e = self.device.run_line(line);
        if e.code != 0 {
            return Err(DeviceFailure::new(
                format!(
                    "`{}` exited {}: {}",
                    line.split_whitespace().next().unwrap_or(""),
                    e.code,
                    String::from_utf8_lossy(&e.stderr).trim()
                ),
                false,
            ));
        }
        let mut out = e.stdout;
        out.extend_from_slice(&e.stderr);
        Ok(out)
    }
}

impl FlowDevice for SimFlowDevice {
    fn dump_ui(&mut self) -> Result<String, DeviceFailure> {
        let out = self.run("uiautomator dump /dev/tty")?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn tap(&mut self, at: Point) -> Result<(), DeviceFailure> {
        self.run(&format!("input tap {} {}", at.x, at.y)).map(drop)
    }

    fn swipe(&mut self, from: Point, to: Point, duration_ms: u32) -> Result<(), DeviceFailure> {
        self.run(&format!(
            "input swipe {} {} {} {} {duration_ms}",
            from.x, from.y, to.x, to.y
        ))
        .map(drop)
    }

    fn back(&mut self) -> Result<(), DeviceFailure> {
        self.run("input keyevent 4").map(drop)
    }

    fn open_url(&mut self, url: &str) -> Result<(), DeviceFailure> {
        self.run(&format!(
            "am start -a android.intent.action.VIEW -d {}",
            shell_quote(url)
        ))
        .map(drop)
    }

    fn screenshot(&mut self) -> Result<Vec<u8>, DeviceFailure> {
        self.run("screencap -p")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_a_hostile_url_one_word() {
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
        let words = shell_words_split(&format!("am start -d {}", shell_quote("x'; rm -rf / #")));
        assert_eq!(words.last().map(String::as_str), Some("x'; rm -rf / #"));
    }

    /// POSIX single-quote splitting, enough to check the quoting above.
    fn shell_words_split(s: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut in_q = false;
        let mut chars = s.chars().peekable();
        let mut have = false;
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    in_q = !in_q;
                    have = true;
                }
                '\\' if !in_q => {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                }
                ' ' if !in_q => {
                    if have || !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                        have = false;
                    }
                }
                c => cur.push(c),
            }
        }
        if have || !cur.is_empty() {
            out.push(cur);
        }
        out
    }
}
