//! `screencap [-p] [FILE]` (PNG, or raw RGBA with a 16-byte header without `-p`), and the
//! same picture for the ADB `framebuffer:` service ([`Device::framebuffer`]).

use std::time::Duration;

use image::RgbImage;

use crate::device::{Device, Exec};
use crate::render;

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let ms = cost(d);
    let png = args.contains(&"-p");
    let file = args.iter().copied().find(|a| !a.starts_with('-'));
    let want_png = png || file.is_some_and(|f| f.ends_with(".png"));
    let bytes = match d.replay_png().filter(|_| want_png) {
        // Replay: the recorded screenshot's bytes (or the one rendered from the dump).
        Some(recorded) => recorded.as_ref().clone(),
        None if want_png => render::encode_png(&picture(d)),
        None => render::encode_raw(&picture(d)),
    };
    match file {
        Some(f) => d.write_file(f, bytes),
        None => e.stdout = bytes,
    }
    ms
}

impl Device {
    /// The screen as raw RGBA pixels for the `framebuffer:` service: (width, height, data,
    /// simulated cost).
    pub fn framebuffer(&mut self) -> (u32, u32, Vec<u8>, Duration) {
        let ms = cost(self);
        self.counters.device_time_ms += ms;
        let img = picture(self);
        let (w, h) = img.dimensions();
        (w, h, render::rgba(&img), Duration::from_millis(ms))
    }
}

/// Count a screen capture; its simulated time (an owed transition included), ms.
fn cost(d: &mut Device) -> u64 {
    d.counters.screencaps += 1;
    d.replay_note_screencap();
    d.observe_cost() + d.cost(200, 350)
}

/// The screen as it is now, at the display's size (black while the screen is off, as
/// SurfaceFlinger captures a display that is off).
pub(crate) fn picture(d: &Device) -> RgbImage {
    let (w, h) = (d.cfg.width.max(1) as u32, d.cfg.height.max(1) as u32);
    if !d.system().screen_on {
        return RgbImage::new(w, h);
    }
    if let Some(recorded) = d.replay_picture() {
        return recorded;
    }
    let screen = d.display_screen(d.now());
    render::render(&screen, w, h)
}
