//! A [`FlowDevice`] over the simulated phone in-process: the same shell commands the
//! ADB device sends, run directly on [`cmautobuy_sim_phone::Device`] (no sockets).
//! The flow tests' scripted device: deterministic, fast, and its dumps are the shapes
//! the real app produces. End-to-end tests use the real ADB transport instead.

use cmautobuy_sim_phone::Device;

use crate::device::quote::command_line;
use crate::flow::driver::{DeviceFailure, FlowDevice};
use crate::screen::Point;

/// The simulated phone, driven by command lines.
pub struct SimFlowDevice {
    pub device: Device,
}

impl SimFlowDevice {
    pub fn new(device: Device) -> Self {
        SimFlowDevice { device }
    }

    /// Runs one command; every word is quoted by the device layer's
    /// [`command_line`] (deep links come from the network).
    fn run(&mut self, argv: &[&str]) -> Result<Vec<u8>, DeviceFailure> {
        let line = command_line(argv).map_err(|e| DeviceFailure::new(e.to_string(), false))?;
        let e = self.device.run_line(&line);
        if e.code != 0 {
            return Err(DeviceFailure::new(
                format!(
                    "`{}` exited {}: {}",
                    argv.first().copied().unwrap_or(""),
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
        let out = self.run(&["uiautomator", "dump", "/dev/tty"])?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn tap(&mut self, at: Point) -> Result<(), DeviceFailure> {
        let (x, y) = (at.x.to_string(), at.y.to_string());
        self.run(&["input", "tap", &x, &y]).map(drop)
    }

    fn swipe(&mut self, from: Point, to: Point, duration_ms: u32) -> Result<(), DeviceFailure> {
        let w = [from.x, from.y, to.x, to.y].map(|v| v.to_string());
        let d = duration_ms.to_string();
        self.run(&["input", "swipe", &w[0], &w[1], &w[2], &w[3], &d])
            .map(drop)
    }

    fn back(&mut self) -> Result<(), DeviceFailure> {
        self.run(&["input", "keyevent", "4"]).map(drop)
    }

    fn open_url(&mut self, url: &str) -> Result<(), DeviceFailure> {
        self.run(&["am", "start", "-a", "android.intent.action.VIEW", "-d", url])
            .map(drop)
    }

    fn screenshot(&mut self) -> Result<Vec<u8>, DeviceFailure> {
        self.run(&["screencap", "-p"])
    }
}
