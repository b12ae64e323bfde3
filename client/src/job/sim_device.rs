//! A [`Device`] over the simulated phone in-process: the same shell commands the ADB
//! device sends, run directly on [`cmautobuy_sim_phone::Device`] (no sockets). The
//! scripted device of the unit tests of the shell: deterministic, fast, and its dumps
//! are the shapes the real app produces. End-to-end tests use the real ADB transport.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::device::quote::command_line;
use crate::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use crate::screen::{Point, Tree};

/// The simulated phone, driven by command lines.
pub struct SimFlowDevice {
    device: Mutex<cmautobuy_sim_phone::Device>,
}

impl SimFlowDevice {
    pub fn new(device: cmautobuy_sim_phone::Device) -> Self {
        SimFlowDevice {
            device: Mutex::new(device),
        }
    }

    /// The simulated phone itself (its app state and order ledger: the truth in tests).
    pub fn phone(&self) -> MutexGuard<'_, cmautobuy_sim_phone::Device> {
        self.device.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs one command; every word is quoted by the device layer's [`command_line`]
    /// (deep links come from the network).
    fn run(&self, argv: &[&str]) -> Result<Vec<u8>, DeviceError> {
        let line = command_line(argv)?;
        let e = self.phone().run_line(&line);
        if e.code != 0 {
            return Err(DeviceError::CommandFailed {
                program: argv.first().copied().unwrap_or("").to_string(),
                exit_code: e.code,
                stderr: String::from_utf8_lossy(&e.stderr).trim().to_string(),
            });
        }
        let mut out = e.stdout;
        out.extend_from_slice(&e.stderr);
        Ok(out)
    }
}

impl Device for SimFlowDevice {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        let out = self.run(&["uiautomator", "dump", "/dev/tty"])?;
        let xml = String::from_utf8_lossy(&out).into_owned();
        let tree = Tree::parse(&xml)?;
        Ok(UiDump { xml, tree })
    }

    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        let (x, y) = (at.x.to_string(), at.y.to_string());
        self.run(&["input", "tap", &x, &y]).map(drop)
    }

    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        let w = [from.x, from.y, to.x, to.y].map(|v| v.to_string());
        let d = duration.as_millis().to_string();
        self.run(&["input", "swipe", &w[0], &w[1], &w[2], &w[3], &d])
            .map(drop)
    }

    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        self.run(&["input", "keyevent", &code.0.to_string()])
            .map(drop)
    }

    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        self.run(&["am", "start", "-a", "android.intent.action.VIEW", "-d", url])
            .map(drop)
    }

    fn screenshot(&self) -> Result<Png, DeviceError> {
        let bytes = self.run(&["screencap", "-p"])?;
        Ok(Png {
            bytes,
            width: 0,
            height: 0,
        })
    }

    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        let line = command_line(argv)?;
        let e = self.phone().run_line(&line);
        Ok(ShellOutput {
            stdout: e.stdout,
            stderr: e.stderr,
            exit_code: e.code,
        })
    }
}
