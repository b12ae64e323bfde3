//! `screencap`: a picture of the current screen drawn from the accessibility tree.
//!
//! No font ships with the build (and none may be downloaded), so text is drawn as one
//! block per glyph: enough for a human to see where labels are and what is selected.
//! Images are pastel boxes, clickable views get an outline, selected views a thick red
//! frame (PDD red), disabled views are greyed.

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ImageEncoder, Rgb, RgbImage};

use crate::ui::{Node, Rect, Screen};

const RED: Rgb<u8> = Rgb([224, 46, 36]);

fn fill(img: &mut RgbImage, r: &Rect, c: Rgb<u8>) {
    let (w, h) = (img.width() as i32, img.height() as i32);
    let (l, t, rr, b) = (r.l.max(0), r.t.max(0), r.r.min(w), r.b.min(h));
    for y in t..b {
        for x in l..rr {
            img.put_pixel(x as u32, y as u32, c);
        }
    }
}

fn frame(img: &mut RgbImage, r: &Rect, c: Rgb<u8>, th: i32) {
    fill(img, &Rect::new(r.l, r.t, r.r, r.t + th), c);
    fill(img, &Rect::new(r.l, r.b - th, r.r, r.b), c);
    fill(img, &Rect::new(r.l, r.t, r.l + th, r.b), c);
    fill(img, &Rect::new(r.r - th, r.t, r.r, r.b), c);
}

fn pastel(r: &Rect) -> Rgb<u8> {
    let h = (r.l as u32)
        .wrapping_mul(2654435761)
        .wrapping_add((r.t as u32).wrapping_mul(40503))
        .wrapping_add(r.r as u32);
    Rgb([
        180 + (h % 60) as u8,
        180 + ((h >> 8) % 60) as u8,
        180 + ((h >> 16) % 60) as u8,
    ])
}

fn draw(img: &mut RgbImage, n: &Node) {
    let b = n.bounds;
    match n.class {
        "android.widget.ImageView" => fill(img, &b, pastel(&b)),
        "android.widget.EditText" => frame(img, &b, Rgb([120, 120, 120]), 2),
        _ => {}
    }
    if !n.enabled {
        fill(img, &b, Rgb([225, 225, 225]));
    }
    if n.clickable && n.class != "android.widget.FrameLayout" {
        frame(img, &b, Rgb([200, 200, 200]), 1);
    }
    if !n.text.is_empty() {
        // One block per glyph, height ≈ 70 % of the box.
        let gh = ((b.b - b.t) * 7 / 10).clamp(6, 60);
        let y0 = b.t + (b.b - b.t - gh) / 2;
        let mut x = b.l;
        let color = if n.selected { RED } else { Rgb([60, 60, 60]) };
        for ch in n.text.chars() {
            let gw = if ch.is_ascii() { gh / 2 } else { gh };
            if x + gw > b.r {
                break;
            }
            if !ch.is_whitespace() {
                fill(img, &Rect::new(x + 1, y0, x + gw - 1, y0 + gh), color);
            }
            x += gw + 2;
        }
    }
    for c in &n.children {
        draw(img, c);
    }
    if n.selected && n.clickable {
        frame(img, &b, RED, 5);
    }
}

/// Render the screen into an RGB image of the given size.
pub fn render(screen: &Screen, w: u32, h: u32) -> RgbImage {
    let mut img = RgbImage::from_pixel(w, h, Rgb([250, 250, 250]));
    for win in &screen.windows {
        if win.package == "com.android.systemui" {
            fill(&mut img, &win.bounds, Rgb([30, 30, 30]));
        } else if win.package == "com.miui.home" && win.children.is_empty() {
            fill(&mut img, &win.bounds, Rgb([240, 240, 240]));
        } else if win.action != crate::ui::Action::None && win.bounds.t == 0 {
            // A popup window: dim what is below.
            for p in img.pixels_mut() {
                p.0 = [p.0[0] / 2, p.0[1] / 2, p.0[2] / 2];
            }
        }
        draw(&mut img, win);
    }
    img
}

/// PNG bytes (`screencap -p`).
pub fn encode_png(img: &RgbImage) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * 1024);
    let enc = PngEncoder::new_with_quality(&mut out, CompressionType::Fast, FilterType::Sub);
    // Writing into a Vec cannot fail for a well-formed buffer; an empty result would be
    // caught by any PNG check on the caller's side.
    let _ = enc.write_image(
        img.as_raw(),
        img.width(),
        img.height(),
        image::ExtendedColorType::Rgb8,
    );
    out
}

/// Raw `screencap` output: width, height, format (1 = RGBA_8888), colour space, pixels.
pub fn encode_raw(img: &RgbImage) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + (img.width() * img.height() * 4) as usize);
    for v in [img.width(), img.height(), 1, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&rgba(img));
    out
}

/// The pixels as opaque RGBA, row by row (raw `screencap` and the `framebuffer:` service).
pub fn rgba(img: &RgbImage) -> Vec<u8> {
    let mut out = Vec::with_capacity((img.width() * img.height() * 4) as usize);
    for p in img.pixels() {
        out.extend_from_slice(&[p.0[0], p.0[1], p.0[2], 255]);
    }
    out
}
