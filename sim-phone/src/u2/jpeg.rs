//! A small baseline JPEG encoder (JFIF, 8-bit YCbCr 4:4:4, the standard quantisation and
//! Huffman tables of ITU T.81 Annex K, quality scaled as libjpeg does): the server's
//! `takeScreenshot` answers a JPEG, as the real one does (Android's `Bitmap.compress`),
//! and the image crate is built without its JPEG codec.

use image::RgbImage;

/// Annex K.1 luminance quantisation table (natural order).
const Q_LUM: [u16; 64] = [
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113,
    92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
/// Annex K.1 chrominance quantisation table (natural order).
const Q_CHR: [u16; 64] = [
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
    47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
];
/// Zigzag position → natural index.
const ZIGZAG: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

// Annex K.3: code counts per length (1..=16) and symbols.
const DC_LUM_BITS: [u8; 16] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_LUM_VALS: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const DC_CHR_BITS: [u8; 16] = [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0];
const DC_CHR_VALS: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const AC_LUM_BITS: [u8; 16] = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d];
const AC_LUM_VALS: [u8; 162] = [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
    0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
    0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
    0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
    0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
    0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];
const AC_CHR_BITS: [u8; 16] = [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77];
const AC_CHR_VALS: [u8; 162] = [
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
    0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
    0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
    0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
    0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
    0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
    0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
    0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];

/// (code, length) per symbol of a table given as counts per length and symbols.
fn huffman(bits: &[u8; 16], vals: &[u8]) -> [(u16, u8); 256] {
    let mut table = [(0u16, 0u8); 256];
    let mut code: u16 = 0;
    let mut k = 0;
    for (len, &n) in bits.iter().enumerate() {
        for _ in 0..n {
            if let Some(&v) = vals.get(k) {
                table[v as usize] = (code, len as u8 + 1);
            }
            code = code.wrapping_add(1);
            k += 1;
        }
        code <<= 1;
    }
    table
}

/// libjpeg's quality scaling of a base table.
fn scaled(base: &[u16; 64], quality: u8) -> [u16; 64] {
    let q = u32::from(quality.clamp(1, 100));
    let scale = if q < 50 { 5000 / q } else { 200 - 2 * q };
    let mut t = [0u16; 64];
    for (o, b) in t.iter_mut().zip(base) {
        *o = ((u32::from(*b) * scale + 50) / 100).clamp(1, 255) as u16;
    }
    t
}

struct Bits {
    out: Vec<u8>,
    acc: u32,
    n: u32,
}

impl Bits {
    fn put(&mut self, code: u16, len: u8) {
        for i in (0..len).rev() {
            self.acc = (self.acc << 1) | u32::from((code >> i) & 1);
            self.n += 1;
            if self.n == 8 {
                let b = self.acc as u8;
                self.out.push(b);
                if b == 0xff {
                    self.out.push(0);
                }
                self.acc = 0;
                self.n = 0;
            }
        }
    }

    fn finish(mut self) -> Vec<u8> {
        while self.n != 0 {
            self.put(1, 1);
        }
        self.out
    }
}

/// Bits needed for |v| and the bits written for v (negative: one's complement).
fn category(v: i32) -> (u8, u16) {
    let a = v.unsigned_abs();
    let cat = (32 - a.leading_zeros()) as u8;
    let bits = if v < 0 { v - 1 } else { v };
    (cat, (bits as u32 & ((1u32 << cat) - 1)) as u16)
}

struct Tables {
    cos: [[f32; 8]; 8],
}

impl Tables {
    fn new() -> Tables {
        let mut cos = [[0f32; 8]; 8];
        for (x, row) in cos.iter_mut().enumerate() {
            for (u, c) in row.iter_mut().enumerate() {
                let cu = if u == 0 {
                    std::f32::consts::FRAC_1_SQRT_2
                } else {
                    1.0
                };
                *c = cu
                    * 0.5
                    * (((2 * x + 1) as f32 * u as f32 * std::f32::consts::PI) / 16.0).cos();
            }
        }
        Tables { cos }
    }

    /// The 2-D DCT of a level-shifted block (separable: rows, then columns).
    fn fdct(&self, block: &[f32; 64]) -> [f32; 64] {
        let mut tmp = [0f32; 64];
        for y in 0..8 {
            for u in 0..8 {
                let mut s = 0.0;
                for x in 0..8 {
                    s += block[y * 8 + x] * self.cos[x][u];
                }
                tmp[y * 8 + u] = s;
            }
        }
        let mut out = [0f32; 64];
        for u in 0..8 {
            for v in 0..8 {
                let mut s = 0.0;
                for y in 0..8 {
                    s += tmp[y * 8 + u] * self.cos[y][v];
                }
                out[v * 8 + u] = s;
            }
        }
        out
    }
}

struct Component {
    q: [u16; 64],
    dc: [(u16, u8); 256],
    ac: [(u16, u8); 256],
    prev_dc: i32,
}

fn encode_block(bits: &mut Bits, t: &Tables, c: &mut Component, block: &[f32; 64]) {
    let f = t.fdct(block);
    let mut z = [0i32; 64];
    for (k, &n) in ZIGZAG.iter().enumerate() {
        z[k] = (f[n] / f32::from(c.q[n])).round() as i32;
    }
    let diff = z[0] - c.prev_dc;
    c.prev_dc = z[0];
    let (cat, v) = category(diff);
    let (code, len) = c.dc[cat as usize];
    bits.put(code, len);
    bits.put(v, cat);
    let mut run = 0;
    for &coef in &z[1..] {
        if coef == 0 {
            run += 1;
            continue;
        }
        while run > 15 {
            let (code, len) = c.ac[0xf0];
            bits.put(code, len);
            run -= 16;
        }
        let (cat, v) = category(coef);
        let (code, len) = c.ac[(run << 4 | cat as usize) & 0xff];
        bits.put(code, len);
        bits.put(v, cat);
        run = 0;
    }
    if run > 0 {
        let (code, len) = c.ac[0x00];
        bits.put(code, len);
    }
}

fn segment(out: &mut Vec<u8>, marker: u8, body: &[u8]) {
    out.extend_from_slice(&[0xff, marker]);
    out.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// Encode `img` as a baseline JFIF JPEG at `quality` (1–100).
pub fn encode(img: &RgbImage, quality: u8) -> Vec<u8> {
    let (w, h) = img.dimensions();
    let (w16, h16) = (w.min(65_535) as u16, h.min(65_535) as u16);
    let mut out = vec![0xff, 0xd8];
    segment(
        &mut out,
        0xe0,
        b"JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00",
    );
    let (ql, qc) = (scaled(&Q_LUM, quality), scaled(&Q_CHR, quality));
    for (id, q) in [(0u8, &ql), (1, &qc)] {
        let mut b = vec![id];
        b.extend(ZIGZAG.iter().map(|&n| q[n] as u8));
        segment(&mut out, 0xdb, &b);
    }
    let mut sof = vec![8];
    sof.extend_from_slice(&h16.to_be_bytes());
    sof.extend_from_slice(&w16.to_be_bytes());
    sof.extend_from_slice(&[3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1]);
    segment(&mut out, 0xc0, &sof);
    for (class_id, bits, vals) in [
        (0x00u8, &DC_LUM_BITS, &DC_LUM_VALS[..]),
        (0x10, &AC_LUM_BITS, &AC_LUM_VALS[..]),
        (0x01, &DC_CHR_BITS, &DC_CHR_VALS[..]),
        (0x11, &AC_CHR_BITS, &AC_CHR_VALS[..]),
    ] {
        let mut b = vec![class_id];
        b.extend_from_slice(bits);
        b.extend_from_slice(vals);
        segment(&mut out, 0xc4, &b);
    }
    segment(&mut out, 0xda, &[3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]);

    let t = Tables::new();
    let (dc_l, ac_l) = (
        huffman(&DC_LUM_BITS, &DC_LUM_VALS),
        huffman(&AC_LUM_BITS, &AC_LUM_VALS),
    );
    let (dc_c, ac_c) = (
        huffman(&DC_CHR_BITS, &DC_CHR_VALS),
        huffman(&AC_CHR_BITS, &AC_CHR_VALS),
    );
    let mut comps = [
        Component {
            q: ql,
            dc: dc_l,
            ac: ac_l,
            prev_dc: 0,
        },
        Component {
            q: qc,
            dc: dc_c,
            ac: ac_c,
            prev_dc: 0,
        },
        Component {
            q: qc,
            dc: dc_c,
            ac: ac_c,
            prev_dc: 0,
        },
    ];
    let mut bits = Bits {
        out: Vec::with_capacity((w as usize * h as usize) / 8),
        acc: 0,
        n: 0,
    };
    let raw = img.as_raw();
    let (wu, hu) = (w as usize, h as usize);
    let mut blocks = [[0f32; 64]; 3];
    for by in (0..hu).step_by(8) {
        for bx in (0..wu).step_by(8) {
            // One pixel fills the same position of three blocks.
            #[allow(clippy::needless_range_loop)]
            for i in 0..64 {
                // Edge blocks repeat the last row and column.
                let x = (bx + i % 8).min(wu.saturating_sub(1));
                let y = (by + i / 8).min(hu.saturating_sub(1));
                let p = (y * wu + x) * 3;
                let (r, g, b) = match raw.get(p..p + 3) {
                    Some(px) => (f32::from(px[0]), f32::from(px[1]), f32::from(px[2])),
                    None => (0.0, 0.0, 0.0),
                };
                blocks[0][i] = 0.299 * r + 0.587 * g + 0.114 * b - 128.0;
                blocks[1][i] = -0.168_736 * r - 0.331_264 * g + 0.5 * b;
                blocks[2][i] = 0.5 * r - 0.418_688 * g - 0.081_312 * b;
            }
            for (c, block) in comps.iter_mut().zip(blocks.iter()) {
                encode_block(&mut bits, &t, c, block);
            }
        }
    }
    out.extend_from_slice(&bits.finish());
    out.extend_from_slice(&[0xff, 0xd9]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_and_codes() {
        assert_eq!(category(0), (0, 0));
        assert_eq!(category(1), (1, 1));
        assert_eq!(category(-1), (1, 0));
        assert_eq!(category(-3), (2, 0));
        assert_eq!(category(5), (3, 5));
        let dc = huffman(&DC_LUM_BITS, &DC_LUM_VALS);
        assert_eq!(dc[0], (0b00, 2));
        assert_eq!(dc[1], (0b010, 3));
        assert_eq!(dc[11], (0b1_1111_1110, 9));
        let ac = huffman(&AC_LUM_BITS, &AC_LUM_VALS);
        assert_eq!(ac[0x00], (0b1010, 4), "EOB");
        assert_eq!(ac[0xf0], (0b111_1111_1001, 11), "ZRL");
    }

    #[test]
    fn markers_and_frame_header() {
        let img = RgbImage::from_fn(37, 21, |x, y| image::Rgb([x as u8 * 6, y as u8 * 12, 200]));
        let j = encode(&img, 80);
        assert_eq!(&j[..4], &[0xff, 0xd8, 0xff, 0xe0]);
        assert_eq!(&j[j.len() - 2..], &[0xff, 0xd9]);
        let sof = j.windows(2).position(|w| w == [0xff, 0xc0]).expect("SOF0");
        assert_eq!(u16::from_be_bytes([j[sof + 5], j[sof + 6]]), 21, "height");
        assert_eq!(u16::from_be_bytes([j[sof + 7], j[sof + 8]]), 37, "width");
        assert_eq!(scaled(&Q_LUM, 50), Q_LUM, "quality 50 is the base table");
        assert_eq!(scaled(&Q_LUM, 100), [1; 64]);
    }
}
