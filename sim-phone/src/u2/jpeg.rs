//! `takeScreenshot`'s picture as a JPEG, as the real server answers it (Android's
//! `Bitmap.compress(JPEG, quality)`): the `image` crate's baseline encoder (JFIF, 8-bit
//! YCbCr, the quality scaled as libjpeg does).

use image::codecs::jpeg::JpegEncoder;
use image::RgbImage;

/// `img` as a JPEG of `quality` (1–100; values outside are clamped, as the server does).
pub fn encode(img: &RgbImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a `Vec` of an RGB image whose size fits a JPEG frame cannot fail;
    // a picture that does not fit (more than 65 535 px a side) is answered as an empty
    // body, which the client refuses as it refuses any broken screenshot.
    if JpegEncoder::new_with_quality(&mut out, quality.clamp(1, 100))
        .encode_image(img)
        .is_err()
    {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_jfif_of_the_picture() {
        let img = RgbImage::from_fn(37, 21, |x, y| image::Rgb([x as u8 * 6, y as u8 * 12, 200]));
        let j = encode(&img, 80);
        assert_eq!(&j[..4], &[0xff, 0xd8, 0xff, 0xe0], "SOI, then JFIF's APP0");
        assert_eq!(&j[j.len() - 2..], &[0xff, 0xd9]);
        let sof = j.windows(2).position(|w| w == [0xff, 0xc0]).expect("SOF0");
        assert_eq!(u16::from_be_bytes([j[sof + 5], j[sof + 6]]), 21, "height");
        assert_eq!(u16::from_be_bytes([j[sof + 7], j[sof + 8]]), 37, "width");
        // Decoded again, the picture is the one encoded (lossy: within a few levels).
        let back = image::load_from_memory_with_format(&j, image::ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        assert_eq!(back.dimensions(), (37, 21));
        let p = back.get_pixel(18, 10);
        let want = img.get_pixel(18, 10);
        for c in 0..3 {
            assert!(p[c].abs_diff(want[c]) <= 12, "{p:?} vs {want:?}");
        }
        // A lower quality is a smaller file.
        assert!(encode(&img, 10).len() < encode(&img, 95).len());
    }
}
